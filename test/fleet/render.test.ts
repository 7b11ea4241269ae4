/**
 * `render` through the built executable: an inventory and a template become one validated, signed
 * site folder per row (and an ISO9660 image labelled cluster-config); a bad row names its
 * inventory line and column and leaves nothing behind; the folders pass the node's own trust check.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { REPO, runCli } from '../helpers/cli.js';

const FLEET = path.join(REPO, 'examples/fleet');
const TEMPLATE = path.join(FLEET, 'template');
let work: string;
let key: string;

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'render-'));
  expect(runCli(['keygen', '--out', path.join(work, 'factory')]).code).toBe(0);
  key = path.join(work, 'factory.key');
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const render = (inventory: string, out: string, extra: string[] = []) =>
  runCli(['render', '--inventory', inventory, '--template', TEMPLATE, '--out', out, ...extra], { timeoutMs: 60_000 });

describe('render', () => {
  it('renders, validates and signs one folder per row; a node trusting the key accepts each', () => {
    const out = path.join(work, 'signed');
    const result = render(path.join(FLEET, 'inventory.csv'), out, ['--key', key, '--not-after', '2099-01-01']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^rendered 3 of 3 site\(s\) into .*, signed with key sha256:/);
    expect(readdirSync(out).sort()).toEqual(['store-0042', 'store-0043', 'store-0044']);
    expect(readFileSync(path.join(out, 'store-0043/network.yaml'), 'utf8')).toContain('ip: 10.43.0.20');

    const root = path.join(work, 'node');
    layFactoryNode(root);
    mkdirSync(path.join(root, 'etc/sno-relocate/trust'), { recursive: true });
    cpSync(path.join(work, 'factory.pub'), path.join(root, 'etc/sno-relocate/trust/factory.pub'));
    const checked = runCli(['validate', path.join(out, 'store-0044'), '--root', root]);
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stderr).toContain('signed by trusted key factory.pub');
  });

  it('reads the same inventory as YAML to the same folders', () => {
    const out = path.join(work, 'yaml');
    expect(render(path.join(FLEET, 'inventory.yaml'), out).code).toBe(0);
    expect(readFileSync(path.join(out, 'store-0042/site-config.yaml'), 'utf8')).toBe(
      readFileSync(path.join(work, 'signed/store-0042/site-config.yaml'), 'utf8'),
    );
  });

  it('names the line and column of a bad value, writes nothing for that row, and renders the others', () => {
    const inventory = path.join(work, 'bad.csv');
    const rows = readFileSync(path.join(FLEET, 'inventory.csv'), 'utf8')
      .replace('10.43.0.20,24', '10.43.0.320,24')
      .replace('store44.example.com', 'Store_44');
    writeFileSync(inventory, rows);
    const out = path.join(work, 'bad');
    const result = render(inventory, out);
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('rendered 1 of 3 site(s)');
    expect(result.stdout).toContain('failed 2: store-0043, store-0044');
    expect(result.stdout).toContain(
      'bad.csv line 4, column 3 (ip): network.yaml: $.interfaces[0].ipv4.address[0].ip: not an IPv4 address',
    );
    expect(result.stdout).toContain('bad.csv line 5, column 2 (domain): $.spec.baseDomain: not a valid DNS name');
    expect(readdirSync(out)).toEqual(['store-0042']);
  });

  it('refuses an empty cell, a duplicate site and a column the template needs but the inventory lacks', () => {
    const inventory = path.join(work, 'dup.csv');
    writeFileSync(
      inventory,
      readFileSync(path.join(FLEET, 'inventory.csv'), 'utf8')
        .replace('store-0044,', 'store-0042,')
        .replace(',10.43.0.1,', ',,'),
    );
    const result = render(inventory, path.join(work, 'dup'));
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('dup.csv line 4, column 5 (gateway): empty, and the template uses it');
    expect(result.stdout).toContain('dup.csv line 5, column 1 (site): site store-0042 is also on dup.csv line 3');

    writeFileSync(inventory, 'site,domain\nstore-1,a.example.com\n');
    const missing = render(inventory, path.join(work, 'missing'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no column "ip", "prefix", "gateway", "dns", "registry", which the template uses');
    expect(existsSync(path.join(work, 'missing'))).toBe(false);
  });

  it('packs each site as an ISO9660 image labelled cluster-config holding the signed folder', () => {
    const out = path.join(work, 'iso');
    const result = render(path.join(FLEET, 'inventory.csv'), out, ['--key', key, '--iso']);
    expect(result.code, result.stderr).toBe(0);
    const info = spawnSync('xorriso', ['-indev', path.join(out, 'store-0042.iso'), '-pvd_info', '-find', '/'], {
      encoding: 'utf8',
    });
    expect(info.stdout).toMatch(/Volume Id\s+: cluster-config/);
    for (const name of ['site-config.yaml', 'network.yaml', 'pull-secret.json', 'site-config.sig'])
      expect(info.stdout).toContain(`'/${name}'`);
  });
});
