/**
 * The bundle inside the single executable asks only for Node's built-in modules: anything else is
 * answered with a warning on stderr (so in the journal) and then not found.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers/cli.js';

const BUNDLE = path.join(REPO, 'dist/sno-relocate.cjs');

describe('the bundle', () => {
  it.skipIf(!existsSync(BUNDLE))('requires built-in modules only', () => {
    const names = new Set(
      // as written: some built-ins (node:sea, node:test) exist only with the prefix
      [...readFileSync(BUNDLE, 'utf8').matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]!),
    );
    expect(names.size).toBeGreaterThan(5);
    expect([...names].filter((n) => !isBuiltin(n))).toEqual([]);
  });
});
