import { describe, expect, it } from 'vitest';
import type { StepContext } from './step.js';
import { warnOnce } from './warn-once.js';

describe('warnOnce', () => {
  it('says each warning once per step run, and again in another run', () => {
    const lines: string[] = [];
    const ctxOf = () => ({ log: { warn: (_: object, msg: string) => lines.push(msg) } }) as unknown as StepContext;
    const first = ctxOf();
    warnOnce(first, ['catalog a is not mirrored']);
    warnOnce(first, ['catalog a is not mirrored', 'catalog b is not mirrored']);
    warnOnce(ctxOf(), ['catalog a is not mirrored']);
    expect(lines).toEqual(['catalog a is not mirrored', 'catalog b is not mirrored', 'catalog a is not mirrored']);
  });
});
