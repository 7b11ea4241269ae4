/**
 * The node key at the factory, against a real kube-apiserver and the real systemd-creds: `factory
 * prepare` makes it, seals it (the host key here: this machine has no TPM2; the VM suite gives its
 * guest a software TPM) and prints its recipient for the inventory; `factory check` says which
 * sealing holds it, and with --require-tpm fails a node whose key is not sealed to a TPM2 and
 * prepare refuses to make one, with nothing written.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { runCli } from '../helpers/cli.js';
import { snapshotTree } from '../helpers/tree.js';
import { INSTALL_ADDRESS, netnsAvailable, runOnNode, seedRelocatable } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const hasTpm2 = /^\+driver$/m.test(spawnSync('systemd-creds', ['has-tpm2'], { encoding: 'utf8' }).stdout);

describe.skipIf(kubeSkipped || !netnsAvailable || hasTpm2)('the node key at the factory', () => {
  let env: ClusterEnv;
  let root: string;
  const prepare = (on: string, extra: string[] = []) =>
    runOnNode(['factory', 'prepare', '--root', on, '--kubeconfig', env.cluster.kubeconfigPath, ...extra], {
      server: env.cluster.server,
      addresses: [INSTALL_ADDRESS],
    });
  const check = (extra: string[] = []) =>
    runCli(
      ['factory', 'check', '--shelf-days', '1', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath, ...extra],
      {
        timeoutMs: 120_000,
      },
    );
  const nodeKeyLine = (stdout: string) => stdout.split('\n').find((l) => l.includes(' node key: '));

  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    await seedRelocatable(env.cluster.kubeConfig());
    root = mkdtempSync(path.join(tmpdir(), 'factory-node-key-'));
  }, 180_000);
  afterAll(async () => env?.stop());

  it('is made by prepare, sealed with the host key, and its recipient printed for the inventory', async () => {
    const r = await prepare(root);
    expect(r.code, r.stderr).toBe(0);
    const key = JSON.parse(readFileSync(path.join(root, 'etc/sno-relocate/node-key.json'), 'utf8')) as {
      recipient: string;
      sealing: string;
    };
    expect(key.sealing).toBe('host');
    expect(r.stdout).toContain(
      `node key ${key.recipient} (sealed with the host key: this node has no TPM2): put it in the inventory's node-key column`,
    );
    expect(statSync(path.join(root, 'etc/sno-relocate/node-key.cred')).mode & 0o777).toBe(0o600);
    // the factory record names it too, as its MachineConfig carries it
    const record = JSON.parse(readFileSync(path.join(root, 'etc/sno-relocate/factory.json'), 'utf8')) as {
      nodeKey?: string;
    };
    expect(record.nodeKey).toBe(key.recipient);
    // a second prepare keeps it: sticks already sealed to it still open
    const again = await prepare(root);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`node key ${key.recipient} `);
  });

  it('is reported by check with its sealing, and fails check when a TPM2 is required', () => {
    const recipient = (
      JSON.parse(readFileSync(path.join(root, 'etc/sno-relocate/node-key.json'), 'utf8')) as {
        recipient: string;
      }
    ).recipient;
    expect(nodeKeyLine(check().stdout)).toBe(`ok      node key: ${recipient}, sealed with the host key (no TPM2)`);
    const strict = check(['--require-tpm']);
    expect(strict.code).toBe(1);
    expect(nodeKeyLine(strict.stdout)).toBe(
      'FAIL    node key: node key sealed with the host key (no TPM2), and a TPM2 is required',
    );
  });

  it('is refused by prepare --require-tpm on a node without a TPM2, with nothing written', async () => {
    const fresh = mkdtempSync(path.join(tmpdir(), 'factory-node-key-tpm-'));
    const before = snapshotTree(fresh);
    const r = await prepare(fresh, ['--require-tpm']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('the node key must be sealed to a TPM2, and this node has none systemd-creds can use');
    expect(snapshotTree(fresh)).toEqual(before);
    expect(existsSync(path.join(fresh, 'etc/sno-relocate/node-key.cred'))).toBe(false);
  });
});
