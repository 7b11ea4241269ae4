/** Black-box: the built single executable, as the people who use it would call it. */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { MessageId } from '../../src/log/events.js';
import { STEPS } from '../../src/steps/index.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { EXAMPLE, runCli } from '../helpers/cli.js';
import { snapshotTree } from '../helpers/tree.js';

const factoryRoot = () => {
  const root = mkdtempSync(path.join(tmpdir(), 'cli-'));
  layFactoryNode(root);
  return root;
};

describe('sno-relocate (single executable)', () => {
  it('prints its version', () => {
    const r = runCli(['--version']);
    expect(r).toMatchObject({ code: 0, stdout: `sno-relocate ${pkg.version}\n` });
  });

  it('prints help listing every command and the options most take', () => {
    const r = runCli(['--help']);
    expect(r.code).toBe(0);
    for (const word of [
      'validate',
      'plan',
      'run',
      'status',
      'watch',
      'gate',
      'keygen',
      'sign',
      'render',
      'credentials',
      'fleet status',
      'factory prepare',
      'factory check',
      'factory seal',
      'COMMAND --help',
      '--state-dir',
    ])
      expect(r.stdout).toContain(word);
  });

  it.each([
    [['frobnicate'], 'unknown command "frobnicate"'],
    [['plan', '--frob'], 'plan has no option --frob'],
    [['plan', EXAMPLE, '-o', 'xml'], '-o: "xml" is not one of text, json, yaml'],
    [['run', EXAMPLE, '--only', 'dns'], '--only: unknown step or group "dns"'],
    [['validate', 'a', 'b'], 'validate takes at most one PATH'],
    [['run', '--wait', 'soon'], '--wait: expected a whole number of seconds'],
    [[], 'Usage:'],
  ])('usage error %j exits 2 and says why', (args, message) => {
    const r = runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr + r.stdout).toContain(message);
  });

  it('validates the bundled example', () => {
    const r = runCli(['validate', EXAMPLE]);
    expect(r).toMatchObject({ code: 0, stdout: 'site-config valid: site store-0042, 4 file(s) read\n' });
  });

  it('accepts JSON, warns about unknown keys and names them', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cli-json-'));
    const doc = yaml.load(
      yaml.dump({
        apiVersion: 'sno-relocate/v1',
        kind: 'SiteConfig',
        metadata: { name: 'j' },
        spec: { baseDomain: 'j.example.com', network: { nmstate: { interfaces: [] } }, color: 'blue' },
      }),
    );
    writeFileSync(path.join(dir, 'site-config.json'), JSON.stringify(doc));
    const r = runCli(['validate', dir, '-o', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).findings).toEqual([
      { severity: 'warning', path: '$.spec.color', message: 'unknown key, ignored' },
    ]);
    expect(r.stderr).toContain('$.spec.color');
  });

  it('plans as JSON and YAML with the same content, changing nothing under the root', () => {
    const root = factoryRoot();
    const before = snapshotTree(root);
    const json = runCli(['plan', EXAMPLE, '--root', root, '-o', 'json', '--only', 'ssh-keys,hostname']);
    const yml = runCli(['plan', EXAMPLE, '--root', root, '-o', 'yaml', '--only', 'ssh-keys,hostname']);
    expect(json.code, json.stderr).toBe(0);
    expect(yml.code).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(parsed.steps.map((s: { step: string }) => s.step)).toEqual(['ssh-keys', 'hostname']);
    expect(yaml.load(yml.stdout)).toEqual(parsed);
    expect(snapshotTree(root)).toEqual(before);
  });

  it('reports no run before the first one, and JSON status as null; both name the running version', () => {
    const root = factoryRoot();
    const version = runCli(['--version'])
      .stdout.trim()
      .replace(/^sno-relocate /, '');
    expect(runCli(['status', '--root', root]).stdout).toBe(
      `Agent:    sno-relocate ${version}\nNo run recorded yet.\nFactory admin kubeconfig: not checked yet: a cluster admin until the access step revokes it\n`,
    );
    const json = JSON.parse(runCli(['status', '--root', root, '-o', 'json']).stdout);
    expect(json.run).toBeNull();
    expect(json.factoryAdminKubeconfig).toBe('unknown');
    expect(json.agentVersion).toBe(version);
  });

  it('refuses a damaged state file with exit 3 and says how to recover', () => {
    const root = factoryRoot();
    const state = path.join(root, 'var/lib/sno-relocate');
    mkdirSync(state, { recursive: true });
    writeFileSync(path.join(state, 'state.json'), 'garbage');
    const r = runCli(['status', '--root', root]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('Move it aside');
  });

  it.each([
    [
      'missing',
      (root: string) => ['--kubeconfig', path.join(root, 'nope.kubeconfig')],
      'nope.kubeconfig does not exist',
    ],
    [
      'unreadable',
      (root: string) => {
        writeFileSync(path.join(root, 'bad.kubeconfig'), 'clusters: [');
        return ['--kubeconfig', path.join(root, 'bad.kubeconfig')];
      },
      'bad.kubeconfig cannot be read',
    ],
    ['not found anywhere', () => [], 'no kubeconfig: '],
  ])('kubeconfig %s: run and watch fail alike with exit 1, plan defers the cluster steps', (_, flags, why) => {
    const root = factoryRoot();
    const common = ['--root', root, '--state-dir', path.join(root, 'state'), ...flags(root)];
    const env = { KUBECONFIG: '' };
    const run = runCli(['run', EXAMPLE, '--only', 'routes', ...common], { env });
    const watch = runCli(['watch', '--once', ...common], { env });
    const plan = runCli(['plan', EXAMPLE, '--only', 'routes', ...common], { env });
    expect([run.code, watch.code, plan.code]).toEqual([1, 1, 0]);
    for (const r of [run, watch, plan]) expect(r.stderr + r.stdout).toContain(why);
  });

  it.each([
    ['damaged', 'garbage', 'is damaged (not valid JSON', 'Move it aside'],
    [
      'written by a newer version',
      JSON.stringify({ version: 3, agentVersion: '9.0.0', site: 'store-0042' }),
      'was written by a newer sno-relocate 9.0.0 (state version 3;',
      'run that version, or move the file aside',
    ],
  ])(
    'refuses a run over a %s state file on the console and in the journal, saying what to do',
    (_what, text, why, todo) => {
      const root = factoryRoot();
      const state = path.join(root, 'var/lib/sno-relocate');
      mkdirSync(state, { recursive: true });
      writeFileSync(path.join(state, 'state.json'), text);
      const consoleFile = path.join(root, 'console');
      const r = runCli(['run', EXAMPLE, '--root', root, '--console', consoleFile, '--only', 'ssh-keys']);
      expect(r.code).toBe(3);
      const shown = readFileSync(consoleFile, 'utf8');
      expect(shown).toMatch(
        new RegExp(`^sno-relocate: REFUSED: state file .*state\\.json ${why.replace(/[()]/g, '\\$&')}`),
      );
      expect(shown).toContain(todo);
      expect(r.stderr).toMatch(new RegExp(`ERROR run refused: state file .*${todo}.* msgId=${MessageId.runRefused}`));
      expect(readFileSync(path.join(state, 'state.json'), 'utf8')).toBe(text);
    },
  );

  it('says what is done and what remains when an unfinished run finds no stick', () => {
    const root = factoryRoot();
    const state = path.join(root, 'var/lib/sno-relocate');
    mkdirSync(state, { recursive: true });
    const step = { status: 'done', inputHash: 'h', attempts: 1, startedAt: '2026-01-01T00:00:00Z' };
    const [first, second, third] = STEPS.map((st) => st.name) as [string, string, string];
    writeFileSync(
      path.join(state, 'state.json'),
      JSON.stringify({
        version: 1,
        site: 'store-0042',
        configHash: 'c',
        result: 'failed',
        startedAt: '2026-01-01T00:00:00Z',
        steps: { [first]: step, [second]: step, [third]: { ...step, status: 'failed' } },
      }),
    );
    const consoleFile = path.join(root, 'console');
    const r = runCli(['run', '--root', root, '--wait', '0', '--console', consoleFile]);
    expect(r.code).toBe(0);
    const remaining = STEPS.map((st) => st.name).slice(2);
    const line =
      `no site-config appeared; the run for site store-0042 is unfinished: done ${first}, ${second}; ` +
      `remaining ${remaining.join(', ')} (plug the stick in again to finish)`;
    expect(readFileSync(consoleFile, 'utf8')).toBe(`sno-relocate: ${line}\n`);
    expect(r.stderr).toContain(line);
    expect(r.stderr).not.toContain('nothing was changed');
  });

  it('says on the console that the state file is damaged when a run finds no stick, not that nothing changed', () => {
    const root = factoryRoot();
    const state = path.join(root, 'var/lib/sno-relocate');
    mkdirSync(state, { recursive: true });
    writeFileSync(path.join(state, 'state.json'), '{"version": 1, "site": "store-0042", "steps": {');
    const consoleFile = path.join(root, 'console');
    const r = runCli(['run', '--root', root, '--wait', '0', '--console', consoleFile]);
    expect(r.code).toBe(3);
    const shown = readFileSync(consoleFile, 'utf8');
    expect(shown).toMatch(/^sno-relocate: REFUSED: no site-config appeared, and state file .*state\.json is damaged/);
    expect(shown).toContain('Move it aside');
    expect(shown + r.stderr).not.toContain('nothing was changed');
    expect(r.stderr).toMatch(
      new RegExp(`ERROR run refused: no site-config appeared, .* msgId=${MessageId.runRefused}`),
    );
  });

  it('with no PATH and nothing to find, waits no longer than asked and exits 0', () => {
    const root = factoryRoot();
    const r = runCli(['run', '--root', root, '--wait', '0']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('no site-config appeared');
  });

  it('tells the technician on the console that it waits for a stick, and that none came', () => {
    const root = factoryRoot();
    const consoleFile = path.join(root, 'console');
    const r = runCli(['run', '--root', root, '--wait', '1', '--console', consoleFile]);
    expect(r.code).toBe(0);
    expect(readFileSync(consoleFile, 'utf8')).toBe(
      'sno-relocate: waiting for a site-config (a USB stick labelled cluster-config or relocation-config)\n' +
        'sno-relocate: no site-config appeared; nothing was changed (plug in the stick to start)\n',
    );
  });

  it('names the first wrong field of an invalid site-config on the console', () => {
    const root = factoryRoot();
    const dir = mkdtempSync(path.join(tmpdir(), 'cli-bad-'));
    writeFileSync(
      path.join(dir, 'site-config.yaml'),
      yaml.dump({
        apiVersion: 'sno-relocate/v1',
        kind: 'SiteConfig',
        metadata: { name: 'bad' },
        spec: { baseDomain: 'e.example.com', network: { nmstate: { interfaces: [] }, internalIP: 'not-a-cidr' } },
      }),
    );
    const consoleFile = path.join(root, 'console');
    const r = runCli(['run', dir, '--root', root, '--console', consoleFile]);
    expect(r.code).toBe(2);
    expect(readFileSync(consoleFile, 'utf8')).toMatch(
      /^sno-relocate: site-config invalid \(\$\.spec\.network\.internalIP: [^\n]+\); nothing was changed\n$/,
    );
  });

  it('finds /etc/sno-relocate/site-config.yaml under the root without a PATH', () => {
    const root = factoryRoot();
    const etc = path.join(root, 'etc/sno-relocate');
    mkdirSync(etc, { recursive: true });
    writeFileSync(
      path.join(etc, 'site-config.yaml'),
      yaml.dump({
        apiVersion: 'sno-relocate/v1',
        kind: 'SiteConfig',
        metadata: { name: 'etc-site' },
        spec: { baseDomain: 'e.example.com', network: { nmstate: { interfaces: [] } } },
      }),
    );
    const r = runCli(['validate', '--root', root]);
    expect(r).toMatchObject({ code: 0, stdout: 'site-config valid: site etc-site, 1 file(s) read\n' });
  });
});
