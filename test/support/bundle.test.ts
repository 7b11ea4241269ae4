/**
 * `sno-relocate support-bundle`: the built executable, on a node tree holding every kind of secret
 * the agent handles, in the places a bundle reads (the state folder, the journal, the network
 * state). None of them may reach the archive; the text around them must. The programs the bundle
 * runs (journalctl, nmstatectl, ip, nmcli) are stand-ins on PATH that print what a node would, with
 * the secrets in it; the bounds in size and time are checked on the module with small limits.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { createExec } from '../../src/ports/exec.js';
import { createRootFs } from '../../src/ports/fs.js';
import { writeSupportBundle } from '../../src/support/bundle.js';
import { unpackBundle } from '../helpers/bundle.js';
import { runCli } from '../helpers/cli.js';

const PULL_AUTH = Buffer.from('factory-robot:pu11-s3cret-t0ken').toString('base64');
const PULL_SECRET = JSON.stringify({ auths: { 'registry.store42.example.com:5000': { auth: PULL_AUTH } } });
const PRIVATE_KEY_BODY = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDsiteCAkey';
const PRIVATE_KEY = `-----BEGIN PRIVATE KEY-----\n${PRIVATE_KEY_BODY}\n-----END PRIVATE KEY-----`;
const SSH_KEY_BODY = 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABsshkey';
const SSH_KEY = `-----BEGIN OPENSSH PRIVATE KEY-----\n${SSH_KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----`;
const KUBEADMIN_HASH = '$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy';
const PROXY_PASSWORD = 'pr0xy-Pa55w0rd';
const PROXY_URL = `http://store42:${PROXY_PASSWORD}@proxy.store42.example.com:3128`;
const SECRETS = {
  'pull secret': PULL_AUTH,
  'private key': PRIVATE_KEY_BODY,
  'ssh key': SSH_KEY_BODY,
  'kubeadmin hash': KUBEADMIN_HASH.slice(7),
  'proxy password': PROXY_PASSWORD,
};

let work: string;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'support-bundle-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function stub(bin: string, name: string, script: string): void {
  writeFileSync(path.join(bin, name), `#!/bin/sh\n${script}\n`);
  chmodSync(path.join(bin, name), 0o755);
}

/** a node tree with secrets in its state folder, and stand-ins printing them on PATH */
function plantedNode(): { root: string; bin: string } {
  const root = path.join(work, 'node');
  const state = path.join(root, 'var/lib/sno-relocate');
  mkdirSync(path.join(state, 'site-ca'), { recursive: true });
  writeFileSync(path.join(state, 'site-ca/ca.key'), PRIVATE_KEY);
  writeFileSync(
    path.join(state, 'state.json'),
    JSON.stringify({
      version: 2,
      agentVersion: '0.1.0',
      site: 'store-0042',
      configHash: 'c',
      result: 'failed',
      startedAt: '2026-11-26T08:00:00.000Z',
      message: `proxy: ${PROXY_URL} refused the pull secret ${PULL_SECRET}`,
      steps: {
        proxy: {
          status: 'failed',
          inputHash: 'p',
          attempts: 1,
          startedAt: '2026-11-26T08:00:00.000Z',
          plan: [`update proxy.config httpProxy=${PROXY_URL}`],
        },
        access: {
          status: 'done',
          inputHash: 'a',
          attempts: 1,
          startedAt: '2026-11-26T08:00:00.000Z',
          message: KUBEADMIN_HASH,
        },
      },
    }),
  );
  writeFileSync(
    path.join(state, 'watch.json'),
    JSON.stringify({
      version: 1,
      updatedAt: '2026-11-26T08:05:00.000Z',
      health: 'degraded',
      syncErrors: {},
      findings: [
        {
          component: 'operators',
          object: 'ClusterOperator/authentication',
          severity: 'error',
          reason: `oauth ${KUBEADMIN_HASH}`,
        },
      ],
    }),
  );
  mkdirSync(path.join(root, 'etc/sno-relocate'), { recursive: true });
  writeFileSync(
    path.join(root, 'etc/sno-relocate/install.env'),
    `SNO_RELOCATE_IMAGE=registry.example.com/agent@sha256:${'a'.repeat(64)}\n`,
  );
  const bin = path.join(work, 'bin');
  mkdirSync(bin, { recursive: true });
  const journal = [
    `sno-relocate[1]: INFO proxy: applying ${PROXY_URL}`,
    `sno-relocate[1]: DEBUG pull secret ${PULL_SECRET}`,
    `sno-relocate[1]: ERROR key ${PRIVATE_KEY.replace(/\n/g, '\\n')}`,
    `sshd[9]: ${SSH_KEY}`,
    `sno-relocate[1]: INFO kubeadmin hash ${KUBEADMIN_HASH}`,
    'NetworkManager[7]: <info> device (br-ex): state change: activated',
  ].join('\n');
  writeFileSync(path.join(work, 'journal.txt'), `${journal}\n`);
  stub(bin, 'journalctl', `cat ${path.join(work, 'journal.txt')}`);
  stub(bin, 'nmstatectl', `echo "interfaces:\n- name: br-ex\n  description: proxy ${PROXY_URL}"`);
  stub(bin, 'ip', `echo '[{"ifname":"br-ex","addr_info":[{"local":"192.0.2.10"}]}]'`);
  stub(bin, 'nmcli', `echo 'br-ex:uuid:ovs-bridge:br-ex:yes'`);
  return { root, bin };
}

describe('sno-relocate support-bundle', () => {
  it('holds status, state, the last plan, the journal, the network and versions, and no secret', () => {
    const { root, bin } = plantedNode();
    const out = path.join(work, 'bundle.tar.gz');
    const r = runCli(['support-bundle', '--root', root, '--out', out], {
      env: { PATH: `${bin}:${process.env.PATH}` },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^wrote .*bundle\.tar\.gz: \d+ entries/);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const files = unpackBundle(out, path.join(work, 'unpacked'));
    const version = runCli(['--version']).stdout.trim();

    for (const name of [
      'status.txt',
      'status.json',
      'state/state.json',
      'state/watch.json',
      'state/listing.txt',
      'journal/sno-relocate.txt',
      'journal/NetworkManager.txt',
      'journal/machine-config-daemon.txt',
      'network/nmstate.yaml',
      'network/ip-address.json',
      'install/install.env',
      'versions/sno-relocate.txt',
      'MANIFEST.txt',
    ])
      expect(files.has(name), name).toBe(true);
    expect(files.get('versions/sno-relocate.txt')).toContain(version);
    expect(files.get('status.txt')).toContain(`Agent:    ${version}`);
    expect(files.get('status.txt')).toContain('Site:     store-0042');
    // the last plan, the watcher's finding and the journal, with their secrets cut out
    expect(files.get('state/state.json')).toContain(
      'update proxy.config httpProxy=http://store42:<redacted>@proxy.store42.example.com:3128',
    );
    expect(files.get('state/watch.json')).toContain('ClusterOperator/authentication');
    expect(files.get('journal/sno-relocate.txt')).toContain('device (br-ex): state change: activated');
    expect(files.get('journal/sno-relocate.txt')).toContain('<redacted: private key>');
    // the site CA's key is listed, never read
    expect(files.get('state/listing.txt')).toMatch(/^site-ca\/ca\.key {2}\d+ bytes/m);
    expect([...files.keys()].filter((f) => f.endsWith('.key'))).toEqual([]);

    for (const [name, text] of files)
      for (const [kind, secret] of Object.entries(SECRETS)) expect(text, `${kind} in ${name}`).not.toContain(secret);
  });

  it('needs --out, and names it', () => {
    const r = runCli(['support-bundle']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('support-bundle needs --out FILE.tar.gz');
  });
});

describe('the bundle is bounded', () => {
  it('keeps the end of an entry over the size limit, and stops a command at its time limit, saying both', async () => {
    const bin = path.join(work, 'slow-bin');
    mkdirSync(bin, { recursive: true });
    // a journal of 2 MB whose last line matters most, and an nmstatectl that never answers
    stub(bin, 'journalctl', `head -c 2000000 /dev/zero | tr '\\0' 'x'; echo; echo last-line`);
    stub(bin, 'nmstatectl', 'exec sleep 600');
    const saved = process.env.PATH;
    process.env.PATH = `${bin}:${saved}`;
    const out = path.join(work, 'bounded.tar.gz');
    const began = performance.now();
    try {
      const result = await writeSupportBundle(
        {
          fs: createRootFs(path.join(work, 'empty-node')),
          exec: createExec(createLogger({ write: () => undefined, journal: false, level: 'error' })),
          stateDir: '/var/lib/sno-relocate',
          status: async () => ({ text: 'status\n', json: '{}\n' }),
          limits: { entryBytes: 64 * 1024, commandMs: 1500, totalMs: 60_000 },
          now: () => performance.now(),
        },
        out,
      );
      expect(performance.now() - began).toBeLessThan(30_000);
      expect(result.notes).toContain('journal/sno-relocate.txt: cut to its last 65536 bytes of 2000011');
      expect(result.notes.find((n) => n.startsWith('network/nmstate.yaml:'))).toMatch(
        /exited on a signal \(time limit\)/,
      );
    } finally {
      process.env.PATH = saved;
    }
    const files = unpackBundle(out, path.join(work, 'bounded'));
    expect(files.get('journal/sno-relocate.txt')).toMatch(/last-line\n$/);
    expect(Buffer.byteLength(files.get('journal/sno-relocate.txt')!)).toBeLessThanOrEqual(64 * 1024);
    expect(files.get('MANIFEST.txt')).toContain('cut to its last 65536 bytes');
  });
});
