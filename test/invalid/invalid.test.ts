/**
 * Black-box: the built executable refuses every invalid site-config with exit 2, names the field
 * (or file), and changes nothing under the root, not even the state folder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { runCli } from '../helpers/cli.js';
import { hostTree } from '../helpers/tree.js';
import { INVALID_CASES, layCase } from './corpus.js';

const work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-invalid-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function prepare(name: string, c: Parameters<typeof layCase>[2]) {
  const base = path.join(work, name.replace(/[^a-z0-9]+/gi, '-'));
  const root = path.join(base, 'root');
  layFactoryNode(root);
  layCase(path.join(base, 'config'), path.join(base, 'outside'), c);
  return { root, config: path.join(base, 'config') };
}

describe('invalid site-configs', () => {
  it('has a corpus of at least 60 cases', () => {
    expect(INVALID_CASES.length).toBeGreaterThanOrEqual(60);
  });

  it('accepts the unchanged base document, so each case fails for its own reason', () => {
    const { root, config } = prepare('base', { name: 'base', names: '' });
    const result = runCli(['validate', config, '--root', root]);
    // no finding at all; only the note that, with no trust anchor here, nobody vouched for it
    expect(result.stderr.split('\n').filter((l) => l && !l.includes('site-config is not authenticated'))).toEqual([]);
    expect(result.code).toBe(0);
  });

  it.each(INVALID_CASES.map((c) => [c.name, c] as const))('%s: exit 2, names the field, changes nothing', (name, c) => {
    const { root, config } = prepare(name, c);
    const before = hostTree(root);
    const result = runCli(['run', config, '--root', root]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(c.names);
    expect(result.stderr).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/); // no stack trace
    expect(hostTree(root)).toEqual(before);
  });
});
