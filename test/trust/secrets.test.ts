/**
 * Secret hygiene across the whole command line: a site-config full of recognisable secrets (a pull
 * secret, a TLS private key) goes through validate, plan in every format, run of the node steps
 * (with the nmstatectl stand-in and a private D-Bus), status and a broken copy that fails to load;
 * no secret appears in any output, log format, error, the state file or any file under the root
 * (the node steps write none: the pull secret reaches the node through the rendered MachineConfig).
 */
import { cpSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBus } from '../dbus/bus.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { runCli } from '../helpers/cli.js';
import { opensslSelfSigned } from '../helpers/openssl.js';
import { loopbackStoreSpec } from '../node/cli.js';
import { stubEnvironment } from '../node/context.js';
import { factoryNetwork } from '../node/factory-network.js';

const AUTH_SECRET = Buffer.from('robot$store42:Sup3r-S3cret-Registry-Passw0rd').toString('base64');
const PASSWORD = 'Sup3r-S3cret-Registry-Passw0rd';

let work: string;
let root: string;
let site: string;
let keyBody: string;
let bus: Awaited<ReturnType<typeof startTestBus>>;
let env: Record<string, string>;
const outputs: string[] = [];

function secretsIn(text: string): string[] {
  return [AUTH_SECRET, PASSWORD, keyBody].filter((s) => text.includes(s));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'secrets-'));
  root = path.join(work, 'root');
  layFactoryNode(root);
  site = path.join(work, 'site');
  opensslSelfSigned(work, 'tls', { subject: '/CN=*.apps.sno.store42.example.com', days: 30 });
  const keyPem = readFileSync(path.join(work, 'tls.key'), 'utf8');
  keyBody = keyPem.split('\n')[5]!;
  const spec = {
    ...loopbackStoreSpec(AUTH_SECRET, 5),
    certificates: { ingress: { certFile: 'tls.crt', keyFile: 'tls.key' } },
  };
  mkdirSync(site);
  writeFileSync(
    path.join(site, 'site-config.yaml'),
    yaml.dump({ apiVersion: 'sno-relocate/v1', kind: 'SiteConfig', metadata: { name: 'store-0042' }, spec }),
  );
  cpSync(path.join(work, 'tls.crt'), path.join(site, 'tls.crt'));
  cpSync(path.join(work, 'tls.key'), path.join(site, 'tls.key'));
  bus = await startTestBus({ root });
  env = { ...stubEnvironment(root), DBUS_SYSTEM_BUS_ADDRESS: bus.address };
  writeFileSync(env.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
});
afterAll(async () => {
  await bus?.stop();
  rmSync(work, { recursive: true, force: true });
});

const cli = (...args: string[]) => {
  const result = runCli([...args, '--root', root], { env, timeoutMs: 60_000 });
  outputs.push(`$ ${args.join(' ')}\n${result.stdout}${result.stderr}`);
  return result;
};

describe('secrets', () => {
  it('never appear in validate, plan (text, json, yaml) or their logs, in either log format', () => {
    for (const format of ['text', 'json']) {
      expect(cli('validate', site, '-o', 'json', '--log-format', format, '--log-level', 'debug').code).toBe(0);
      for (const output of ['text', 'json', 'yaml']) {
        const plan = cli('plan', site, '--only', 'node', '-o', output, '--log-format', format, '--log-level', 'debug');
        expect(plan.code, plan.stderr).toBe(0);
        expect(plan.stdout).toContain('store-0042');
      }
    }
    expect(outputs.flatMap(secretsIn)).toEqual([]);
  });

  it('never appear in a run, status, the state file or any file the node steps write', () => {
    const run = cli('run', site, '--only', 'node', '--log-level', 'debug');
    expect(run.code, run.stderr).toBe(0);
    // the executable talks D-Bus with built-in modules only: no loader warning in the journal
    expect(run.stderr).not.toMatch(/Warning: .*single-executable|require\(\) provided to the main script/);
    expect(cli('status').code).toBe(0);
    expect(cli('status', '-o', 'json').code).toBe(0);
    expect(outputs.flatMap(secretsIn)).toEqual([]);
    const holders = filesUnder(root).filter(
      (f) => !f.endsWith('.nmstatectl-stub.json') && secretsIn(readFileSync(f, 'latin1')).length > 0,
    );
    // the node gets the pull secret through the rendered MachineConfig, never from the node steps
    expect(holders.map((f) => path.relative(root, f))).toEqual([]);
    expect(lstatSync(path.join(root, 'var/lib/sno-relocate/state.json')).isFile()).toBe(true);
  });

  it('never appear in the error of a site-config that fails to load', () => {
    const broken = path.join(work, 'broken');
    cpSync(site, broken, { recursive: true });
    // a pull secret whose JSON is cut off right after the secret, and a key file that is not PEM
    const text = readFileSync(path.join(broken, 'site-config.yaml'), 'utf8').replace(
      /pullSecret:[\s\S]*?sshAuthorizedKeys/,
      'pullSecretFile: pull-secret.json\n  sshAuthorizedKeys',
    );
    writeFileSync(path.join(broken, 'site-config.yaml'), text);
    writeFileSync(path.join(broken, 'pull-secret.json'), `{"auths":{"r.example.com":{"auth":"${AUTH_SECRET}"`);
    writeFileSync(path.join(broken, 'tls.key'), `${keyBody}\n${PASSWORD}\n`);
    for (const format of ['text', 'json']) {
      const result = cli('validate', broken, '--log-format', format);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('pull-secret.json');
    }
    expect(outputs.flatMap(secretsIn)).toEqual([]);
  });
});
