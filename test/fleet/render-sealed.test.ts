/**
 * `render` with the node columns of the inventory, through the built executable: each row's
 * serial binds its signature, its node key (the age recipient `factory prepare` printed) seals the
 * folder's pull secret, and its generation goes into the signature; a row whose node key is not a
 * recipient, or that seals without a signing key, names its inventory cell and leaves nothing.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, runCli } from '../helpers/cli.js';

const FLEET = path.join(REPO, 'examples/fleet');
let work: string;
let key: string;
/** one node key per store, made by Debian's age-keygen: identity file and recipient */
const nodes: { identity: string; recipient: string }[] = [];

/** the example inventory with the node columns added, one value per row */
function inventory(name: string, columns: Record<string, string[]>): string {
  const [header, ...rows] = readFileSync(path.join(FLEET, 'inventory.csv'), 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));
  const names = Object.keys(columns);
  const lines = [
    [header, ...names].join(','),
    ...rows.map((row, i) => [row, ...names.map((c) => columns[c]![i] ?? '')].join(',')),
  ];
  const file = path.join(work, name);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const render = (file: string, out: string, extra: string[] = ['--key', key]) =>
  runCli(['render', '--inventory', file, '--template', path.join(FLEET, 'template'), '--out', out, ...extra], {
    timeoutMs: 60_000,
  });

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'render-sealed-'));
  expect(runCli(['keygen', '--out', path.join(work, 'factory')]).code).toBe(0);
  key = path.join(work, 'factory.key');
  for (let i = 0; i < 3; i += 1) {
    const identity = path.join(work, `node-${i}.age`);
    execFileSync('age-keygen', ['-o', identity], { stdio: 'pipe' });
    nodes.push({ identity, recipient: execFileSync('age-keygen', ['-y', identity], { encoding: 'utf8' }).trim() });
  }
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('render with node columns', () => {
  it("seals each folder to its row's node key, binds it to the serial and signs its generation", () => {
    const out = path.join(work, 'sealed');
    const file = inventory('sealed.csv', {
      serial: ['SN0042', 'SN0043', 'SN0044'],
      'node-key': nodes.map((n) => n.recipient),
      generation: ['7', '1', '12'],
    });
    const result = render(file, out);
    expect(result.code, result.stderr).toBe(0);
    const template = readFileSync(path.join(FLEET, 'template/pull-secret.json'), 'utf8');
    for (const [i, site] of ['store-0042', 'store-0043', 'store-0044'].entries()) {
      const sealed = readFileSync(path.join(out, site, 'pull-secret.json'), 'utf8');
      expect(sealed).toMatch(/^-----BEGIN AGE ENCRYPTED FILE-----\n/);
      // the row's own node opens it, with Debian's age
      const opened = execFileSync(
        'age',
        ['--decrypt', '-i', nodes[i]!.identity, path.join(out, site, 'pull-secret.json')],
        {
          encoding: 'utf8',
        },
      );
      expect(opened).toContain('"auths"');
      expect(opened.length).toBeGreaterThanOrEqual(template.length - 200);
      const signed = (JSON.parse(readFileSync(path.join(out, site, 'site-config.sig'), 'utf8')) as { signed: object })
        .signed;
      expect(signed).toMatchObject({
        node: { serial: `SN00${42 + i}` },
        generation: [7, 1, 12][i],
        sealedFor: { node: `SN00${42 + i}`, recipient: nodes[i]!.recipient },
      });
    }
    // another row's node cannot open it
    expect(() =>
      execFileSync('age', ['--decrypt', '-i', nodes[1]!.identity, path.join(out, 'store-0042', 'pull-secret.json')], {
        stdio: 'pipe',
      }),
    ).toThrow(/no identity matched any of the recipients/);
  });

  it('refuses a node key that is no recipient, naming its cell, and leaves no folder', () => {
    const out = path.join(work, 'bad-key');
    const file = inventory('bad-key.csv', {
      serial: ['SN0042', 'SN0043', 'SN0044'],
      'node-key': [nodes[0]!.recipient, 'AGE-SECRET-KEY-1NOTARECIPIENT', nodes[2]!.recipient],
    });
    const result = render(file, out);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(
      'store-0043: bad-key.csv line 3, column 9 (node-key): not an age recipient (age1..., printed by factory prepare)',
    );
    expect(existsSync(path.join(out, 'store-0043'))).toBe(false);
    expect(existsSync(path.join(out, 'store-0042', 'site-config.sig'))).toBe(true);
  });

  it('refuses to seal without a signing key: the node opens sealed fields only from a signed folder', () => {
    const out = path.join(work, 'unsigned');
    const file = inventory('unsigned.csv', {
      serial: ['SN0042', 'SN0043', 'SN0044'],
      'node-key': nodes.map((n) => n.recipient),
    });
    const result = render(file, out, []);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('(node-key): sealing needs --key');
    expect(existsSync(path.join(out, 'store-0042'))).toBe(false);
  });
});
