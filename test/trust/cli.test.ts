/**
 * Signed site-configs through the built executable: the factory makes a key and signs a stick;
 * a node with the public key installed accepts that stick and refuses every other one with exit 3,
 * a plain reason in the log and on the console, and nothing changed under its root.
 */
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { EXAMPLE, runCli } from '../helpers/cli.js';
import { hostTree } from '../helpers/tree.js';

const MACHINE_ID = '4f6b1d8c2e3a4b5c9d0e1f2a3b4c5d6e';
let work: string;
let root: string;
let consoleLog: string;

const site = (name: string) => {
  const dir = path.join(work, name);
  cpSync(EXAMPLE, dir, { recursive: true });
  return dir;
};
const onNode = (command: string, dir: string, extra: string[] = []) =>
  runCli([
    command,
    dir,
    '--root',
    root,
    '--console',
    consoleLog,
    ...(command === 'plan' ? ['--only', 'ssh-keys'] : []),
    ...extra,
  ]);

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'trust-'));
  root = path.join(work, 'root');
  consoleLog = path.join(work, 'console');
  layFactoryNode(root);
  for (const name of ['factory', 'rotated', 'stranger'])
    expect(runCli(['keygen', '--out', path.join(work, name)]).code).toBe(0);
  mkdirSync(path.join(root, 'etc/sno-relocate/trust'), { recursive: true });
  for (const name of ['factory', 'rotated'])
    cpSync(path.join(work, `${name}.pub`), path.join(root, `etc/sno-relocate/trust/${name}.pub`));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('keygen', () => {
  it('writes a private key only its owner can read, and never overwrites one', () => {
    expect(statSync(path.join(work, 'factory.key')).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(work, 'factory.pub'), 'utf8')).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    const again = runCli(['keygen', '--out', path.join(work, 'factory')]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('factory.key exists');
  });
});

describe('sign', () => {
  it('refuses an invalid site-config with exit 2 and writes no signature', () => {
    const dir = site('invalid');
    writeFileSync(
      path.join(dir, 'site-config.yaml'),
      readFileSync(path.join(dir, 'site-config.yaml'), 'utf8').replace(
        'baseDomain: store42.example.com',
        'baseDomain: "not a domain"',
      ),
    );
    const result = runCli(['sign', '--key', path.join(work, 'factory.key'), dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('$.spec.baseDomain');
    expect(() => statSync(path.join(dir, 'site-config.sig'))).toThrow();
  });

  it('refuses a date in the past and two node bindings at once', () => {
    const dir = site('dates');
    expect(
      runCli(['sign', '--key', path.join(work, 'factory.key'), '--not-after', '2001-01-01', dir]).stderr,
    ).toContain('is already past');
    expect(
      runCli(['sign', '--key', path.join(work, 'factory.key'), '--bind-serial', 'A', '--bind-machine-id', 'B', dir])
        .code,
    ).toBe(2);
  });
});

describe('a node with trust anchors', () => {
  it('accepts a stick signed by either trusted key, bound to it', () => {
    for (const key of ['factory', 'rotated']) {
      const dir = site(`good-${key}`);
      const signed = runCli([
        'sign',
        '--key',
        path.join(work, `${key}.key`),
        '--bind-machine-id',
        MACHINE_ID,
        '--not-after',
        '2099-01-01',
        dir,
      ]);
      expect(signed.code, signed.stderr).toBe(0);
      expect(signed.stdout).toContain('signed 4 file(s) of site store-0042');
      const plan = onNode('plan', dir);
      expect(plan.code, plan.stderr).toBe(0);
      expect(plan.stderr).toContain(`site-config signed by trusted key ${key}.pub`);
    }
  });

  const refusals: [string, (dir: string) => void, string][] = [
    [
      'an unsigned stick',
      () => undefined,
      'site-config not signed by a trusted key: the folder has no site-config.sig',
    ],
    [
      'a stick signed by an unknown key',
      (dir) => void runCli(['sign', '--key', path.join(work, 'stranger.key'), dir]),
      'which this node does not trust',
    ],
    [
      'a stick whose network file changed after signing',
      (dir) => {
        runCli(['sign', '--key', path.join(work, 'factory.key'), dir]);
        appendFileSync(path.join(dir, 'network.yaml'), '# edited\n');
      },
      'file network.yaml changed after signing',
    ],
    [
      'a stick made for another node',
      (dir) => void runCli(['sign', '--key', path.join(work, 'factory.key'), '--bind-serial', 'OTHER-NODE', dir]),
      'made for another node (serial OTHER-NODE',
    ],
    [
      'a stick whose signature file was edited',
      (dir) => {
        runCli(['sign', '--key', path.join(work, 'factory.key'), dir]);
        const sig = path.join(dir, 'site-config.sig');
        writeFileSync(sig, readFileSync(sig, 'utf8').replace('"store-0042"', '"store-0043"'));
      },
      'altered after signing',
    ],
  ];

  it.each(refusals)('refuses %s with exit 3 in validate, plan and run, changing nothing', (name, prepare, reason) => {
    const dir = site(`bad-${name.replace(/\W+/g, '-')}`);
    prepare(dir);
    const before = hostTree(root);
    rmSync(consoleLog, { force: true });
    for (const command of ['validate', 'plan', 'run']) {
      const result = onNode(command, dir);
      expect(result.code, `${command}: ${result.stderr}`).toBe(3);
      expect(result.stderr).toContain(reason);
      expect(result.stderr).toContain('nothing on the host was changed');
    }
    expect(hostTree(root)).toEqual(before);
    expect(readFileSync(consoleLog, 'utf8')).toContain(`sno-relocate: site-config refused: `);
  });
});

describe('a node without trust anchors', () => {
  it('goes on with an unsigned stick and warns that it is unauthenticated', () => {
    const bare = mkdtempSync(path.join(tmpdir(), 'bare-'));
    layFactoryNode(bare);
    const result = runCli(['validate', site('unsigned'), '--root', bare]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      'site-config is not authenticated: no trust anchor is installed under /etc/sno-relocate/trust',
    );
    rmSync(bare, { recursive: true, force: true });
  });
});
