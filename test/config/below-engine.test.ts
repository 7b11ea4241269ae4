/**
 * The site-config sits below the engine: nothing under src/config imports the engine or the steps,
 * so the step contract is the engine's (src/engine/step.ts) bound to the site-config in src/steps/step.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers/cli.js';

describe('src/config', () => {
  it('imports nothing from src/engine or src/steps', () => {
    const config = path.join(REPO, 'src/config');
    const sources = readdirSync(config, { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.ts') && !f.endsWith('.test.ts'),
    );
    expect(sources.length).toBeGreaterThan(5);
    const upward = sources.flatMap((file) =>
      [...readFileSync(path.join(config, file), 'utf8').matchAll(/from '([^']+)'/g)]
        .map((m) => path.relative(REPO, path.resolve(path.dirname(path.join(config, file)), m[1]!)))
        .filter((target) => /^src\/(engine|steps)\//.test(target))
        .map((target) => `src/config/${file} -> ${target}`),
    );
    expect(upward).toEqual([]);
  });
});
