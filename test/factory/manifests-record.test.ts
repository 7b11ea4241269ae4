/**
 * A node prepared before installation has its factory record from its first boot: `factory prepare
 * --manifests` writes it into the internal-IP MachineConfig, the installer puts the manifests into
 * the cluster (here: the real kube-apiserver), the machine-config daemon writes their files at the
 * first boot, and from then on validate refuses an internalIP off the install subnet. `factory
 * prepare` on the installed node keeps that record byte for byte (its MachineConfig unchanged, the
 * daemon's file as declared) and refuses to write another one over the daemon's.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FACTORY_RECORD } from '../../src/base/node-files.js';
import { dataUrl, type MachineConfig } from '../../src/node/machineconfig.js';
import { CURRENT_CONFIG } from '../../src/node/rendered-config.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { runCli } from '../helpers/cli.js';
import {
  applyMachineConfigs,
  INSTALL_ADDRESS,
  installConfig,
  netnsAvailable,
  runOnNode,
  seedRelocatable,
  siteWithInternalIP,
} from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const MC = { group: 'machineconfiguration.openshift.io', version: 'v1', plural: 'machineconfigs' };
const INTERNAL_IP_MC = '51-master-sno-relocate-internal-ip';

describe.skipIf(kubeSkipped || !netnsAvailable)('the factory record of a node prepared before installation', () => {
  let env: ClusterEnv;
  let root: string;
  const custom = () => env.cluster.kubeConfig().makeApiClient(CustomObjectsApi);
  const machineConfig = async (name: string) =>
    (await custom().getClusterCustomObject({ ...MC, name })) as MachineConfig & {
      metadata: { resourceVersion: string };
    };
  const recordOnNode = () => readFileSync(path.join(root, FACTORY_RECORD), 'utf8');
  const prepareOnNode = () =>
    runOnNode(['factory', 'prepare', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath, '-o', 'json'], {
      server: env.cluster.server,
      addresses: [INSTALL_ADDRESS],
    });

  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    await seedRelocatable(env.cluster.kubeConfig());
    root = mkdtempSync(path.join(tmpdir(), 'factory-installed-'));
  }, 180_000);
  afterAll(async () => env?.stop());

  it('comes with the manifests: installed through the API, the node has it from its first boot', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'factory-manifests-'));
    const out = path.join(dir, 'openshift');
    const r = runCli([
      'factory', 'prepare', '--manifests', out, '--install-config', installConfig(dir), '--internal-ip', INSTALL_ADDRESS,
    ]); // prettier-ignore
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `${FACTORY_RECORD} comes with them: install subnet 192.168.127.0/24, which validate, plan and run hold a site-config's internalIP to from the first boot`,
    );
    // the installer creates each manifest in the cluster; the machine-config daemon writes them at the first boot
    for (const file of readdirSync(out))
      await custom().createClusterCustomObject({ ...MC, body: yaml.load(readFileSync(path.join(out, file), 'utf8')) });
    await applyMachineConfigs(env.cluster.kubeConfig(), root);

    const record = JSON.parse(recordOnNode()) as Record<string, unknown>;
    expect(record).toMatchObject({
      installAddress: INSTALL_ADDRESS,
      installSubnet: '192.168.127.0/24',
      internalIP: INSTALL_ADDRESS,
    });
    expect(record).not.toHaveProperty('node');
    const refused = runCli(['validate', siteWithInternalIP('10.20.0.10/24'), '--root', root]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(
      '$.spec.network.internalIP: 10.20.0.10/24 is off the install subnet 192.168.127.0/24 of this node (recorded by factory prepare in /etc/sno-relocate/factory.json)',
    );
  });

  it('prepare on the installed node keeps the record the daemon owns: its MachineConfig unchanged, the file as declared', async () => {
    const before = recordOnNode();
    const { resourceVersion } = (await machineConfig(INTERNAL_IP_MC)).metadata;
    const r = await prepareOnNode();
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as {
      configs: { name: string; action: string; disruption: string }[];
      nodeKey: { recipient: string };
    };
    expect(result.configs.map((c) => [c.name, c.action, c.disruption])).toEqual([
      // the kubelet gate the manifests left out
      ['50-master-sno-relocate', 'update', 'reboot'],
      [INTERNAL_IP_MC, 'unchanged', 'none'],
    ]);
    expect(recordOnNode()).toBe(before);
    expect((await machineConfig(INTERNAL_IP_MC)).metadata.resourceVersion).toBe(resourceVersion);
    // made before the node had a key, the record names none: absent, not drift, and check says so
    expect(JSON.parse(before)).not.toHaveProperty('nodeKey');
    const check = runCli(['factory', 'check', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath]);
    expect(check.stdout.split('\n').find((l) => l.includes(' node key: '))).toBe(
      `ok      node key: ${result.nodeKey.recipient}, sealed with the host key (no TPM2); ${FACTORY_RECORD} predates it and names none`,
    );
  });

  it("refuses to write a record over another one the daemon's config declares, changing nothing", async () => {
    // the internal-IP MachineConfig gone from the cluster, the daemon still on a config recording another address
    await custom().deleteClusterCustomObject({ ...MC, name: INTERNAL_IP_MC });
    const daemonConfig = path.join(root, CURRENT_CONFIG);
    const config = JSON.parse(readFileSync(daemonConfig, 'utf8')) as MachineConfig;
    const other = {
      ...JSON.parse(recordOnNode()),
      installAddress: '192.168.127.11/24',
      internalIP: '192.168.127.11/24',
    };
    const declared = config.spec.config.storage!.files.find((f) => f.path === FACTORY_RECORD)!;
    declared.contents.source = dataUrl(`${JSON.stringify(other, null, 2)}\n`);
    writeFileSync(daemonConfig, JSON.stringify(config));
    const before = recordOnNode();

    const r = await prepareOnNode();
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      `${FACTORY_RECORD} is a file of the machine-config daemon's current config rendered-master-relocatable with other contents; writing it would be config drift`,
    );
    expect(r.stderr).toContain(
      `it records another install address than br-ex's ${INSTALL_ADDRESS}; nothing was changed`,
    );
    expect(recordOnNode()).toBe(before);
    await expect(machineConfig(INTERNAL_IP_MC)).rejects.toThrow();
  });
});
