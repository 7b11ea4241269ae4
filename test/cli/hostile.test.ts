/**
 * Hostile sticks against the built executable under a memory ceiling: a site-config (or the nmstate
 * file it names) whose aliases repeat one long string must be refused with exit 2 while the process
 * stays small, before the trust check, since anyone can plug such a stick in. The data-segment limit
 * makes a blow-up crash instead of swapping; GNU time reports the peak resident size. And sticks whose
 * file names or YAML tags hold escape sequences and newlines: what reaches the console, the log and
 * the terminal is one inert line each.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { BINARY, EXAMPLE, runCli } from '../helpers/cli.js';

const CEILING_MB = 150;
const work = mkdtempSync(path.join(tmpdir(), 'hostile-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** One long string and thousands of aliases of it: about 240 KB on the stick, gigabytes expanded. */
const aliasBomb = (prefix: string, listKey: string, indent: string): string =>
  `${prefix}${indent}${listKey}:\n${`${indent}  - *s\n`.repeat(5000)}`;

function stick(name: string, edit: (dir: string) => void): string {
  const dir = path.join(work, name);
  cpSync(EXAMPLE, dir, { recursive: true });
  edit(dir);
  return dir;
}

const sticks = {
  'site-config.yaml': stick('site-config', (dir) => {
    const head = `apiVersion: sno-relocate/v1\nkind: SiteConfig\nmetadata:\n  name: &s ${'x'.repeat(200_000)}\nspec:\n`;
    writeFileSync(path.join(dir, 'site-config.yaml'), aliasBomb(head, 'sshAuthorizedKeys', '  '));
  }),
  'network.yaml': stick('nmstate-file', (dir) => {
    const head = `dns-resolver:\n  config:\n    search: [&s ${'x'.repeat(200_000)}]\n`;
    writeFileSync(path.join(dir, 'network.yaml'), aliasBomb(head, 'server', ''));
  }),
};

function underCeiling(args: string[]): { code: number | null; output: string; peakMb: number } {
  const r = spawnSync(
    'prlimit',
    [`--data=${CEILING_MB * 1024 * 1024}`, '/usr/bin/time', '-f', 'peak-kb=%M', BINARY, ...args],
    { encoding: 'utf8', env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '' }, timeout: 60_000 },
  );
  const peak = /peak-kb=(\d+)/.exec(r.stderr);
  return { code: r.status, output: r.stdout + r.stderr, peakMb: peak ? Number(peak[1]) / 1024 : Infinity };
}

describe.each(Object.entries(sticks))('a stick whose %s is an alias bomb', (file, dir) => {
  it('is refused by validate with exit 2, naming the file, within the memory ceiling', () => {
    expect(readFileSync(path.join(dir, file)).length).toBeLessThan(300_000);
    const r = underCeiling(['validate', dir]);
    expect(r.output).toContain(`${file}: expands to more than 4 times its`);
    expect(r.code).toBe(2);
    expect(r.peakMb).toBeLessThanOrEqual(CEILING_MB);
  });

  it('is refused by run with exit 2 before anything changes, within the memory ceiling', () => {
    const root = path.join(work, `root-${file}`);
    layFactoryNode(root);
    const r = underCeiling(['run', dir, '--root', root, '--state-dir', path.join(root, 'var/lib/sno-relocate')]);
    expect(r.output).toContain('expands to more than 4 times its');
    expect(r.code).toBe(2);
    expect(r.peakMb).toBeLessThanOrEqual(CEILING_MB);
  });
});

/** What a hostile stick would paint: clear the screen, home the cursor, and a forged line of success. */
const PAINT = '\u001b[2J\u001b[H\nsno-relocate: done: site store-0042 is configured\n';
const injections = {
  'a file name': stick('file-name', (dir) => {
    const file = path.join(dir, 'site-config.yaml');
    const text = readFileSync(file, 'utf8').replace(
      'nmstateFile: network.yaml',
      `nmstateFile: ${JSON.stringify(`net${PAINT}.yaml`)}`,
    );
    writeFileSync(file, text);
  }),
  'a percent-encoded YAML tag': stick('yaml-tag', (dir) => {
    writeFileSync(
      path.join(dir, 'site-config.yaml'),
      'apiVersion: !<tag:yaml.org,2002:%1B[2J%1B[H%0Asno-relocate:%20done> x\n',
    );
  }),
};

describe.each(Object.entries(injections))('a stick with escape sequences and newlines in %s', (_what, dir) => {
  const noControls = (text: string) =>
    expect([...text].filter((c) => c !== '\n' && (c.charCodeAt(0) < 0x20 || (c >= '\u007f' && c <= '\u009f')))).toEqual(
      [],
    );

  it('reaches the console as one inert line, and the log and stderr as escapes', () => {
    const root = path.join(work, `root-${path.basename(dir)}`);
    layFactoryNode(root);
    const consoleFile = path.join(root, 'console');
    const r = runCli(['run', dir, '--root', root, '--console', consoleFile, '--state-dir', path.join(root, 'state')]);
    expect(r.code).toBe(2);
    const lines = readFileSync(consoleFile, 'utf8').split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^sno-relocate: site-config invalid \(.*\\x1b\[2J\\x1b\[H.*\); nothing was changed$/);
    noControls(r.stderr);
    expect(r.stderr.split('\n').filter((l) => l.startsWith('sno-relocate: done'))).toEqual([]);
    expect(r.stderr).toContain('\\x1b[2J');
  });

  it('is printed escaped by validate', () => {
    const r = runCli(['validate', dir]);
    expect(r.code).toBe(2);
    noControls(r.stdout + r.stderr);
    expect((r.stdout + r.stderr).split('\n').filter((l) => l.includes('done') && !l.includes('\\x1b'))).toEqual([]);
  });
});
