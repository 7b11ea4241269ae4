import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hashOf } from './state.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** hashOf in a fresh process whose locale is `locale`: the process locale is fixed when it starts */
function hashIn(locale: string, value: unknown): string {
  const state = fileURLToPath(new URL('./state.ts', import.meta.url));
  const script = `import(${JSON.stringify(state)}).then((m) => process.stdout.write(m.hashOf(${JSON.stringify(value)})))`;
  return execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, LC_ALL: locale, LANG: locale },
  });
}

describe('hashOf', () => {
  it('sorts keys by code unit, not by the rules of a language', () => {
    expect(hashOf({ b: 1, B: 2, a: { y: 1, X: 2 } })).toBe(sha256('{"B":2,"a":{"X":2,"y":1},"b":1}'));
  });

  it('hashes alike in a Danish locale, where "aa" sorts after "z", and in the C locale', () => {
    const value = { z: 1, aa: 2 };
    expect(hashIn('da_DK.UTF-8', value)).toBe(sha256('{"aa":2,"z":1}'));
    expect(hashIn('C', value)).toBe(sha256('{"aa":2,"z":1}'));
  });
});
