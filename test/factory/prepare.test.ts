/**
 * `factory prepare` on an installed node, against a real kube-apiserver: the executable runs on
 * "the node" (a network namespace whose br-ex holds the install address), reads br-ex, checks the
 * cluster, records its decision, opens the kubelet gate for the factory and creates the
 * MachineConfigs, saying which reboots the node; a second run changes nothing; a cluster that is
 * not relocatable is refused with every unmet precondition named and nothing written.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRecord, recordedFamilies } from '../../src/node/factory-record.js';
import type { MachineConfig } from '../../src/node/machineconfig.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { runCli } from '../helpers/cli.js';
import { INSTALL_ADDRESS, netnsAvailable, runOnNode, seedRelocatable } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const MC = { group: 'machineconfiguration.openshift.io', version: 'v1', plural: 'machineconfigs' };
const CONFIG = { group: 'config.openshift.io', version: 'v1' };

describe.skipIf(kubeSkipped || !netnsAvailable)('factory prepare on an installed node', () => {
  let env: ClusterEnv;
  let root: string;
  const prepare = (addresses: string[], extra: string[] = []) =>
    runOnNode(['factory', 'prepare', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath, ...extra], {
      server: env.cluster.server,
      addresses,
    });
  const machineConfig = async (name: string) =>
    (await env.cluster
      .kubeConfig()
      .makeApiClient(CustomObjectsApi)
      .getClusterCustomObject({ ...MC, name })) as MachineConfig;

  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    await seedRelocatable(env.cluster.kubeConfig());
    root = mkdtempSync(path.join(tmpdir(), 'factory-prepare-'));
  }, 180_000);
  afterAll(async () => env?.stop());

  it("pins the internal IP to br-ex's install address, records it, opens the gate and says the node reboots once", async () => {
    // the install address first, as ovs-configuration left it; another address behind it
    const r = await prepare([INSTALL_ADDRESS, '10.1.2.3/24']);
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('node sno-factory: install address 192.168.127.10/24 on br-ex is the internal IP');
    expect(r.stdout).toMatch(/^MachineConfig 50-master-sno-relocate: created; REBOOT: .*unit\(s\) kubelet\.service/m);
    // the record travels with the files pinning the address: the machine-config daemon owns it too
    expect(r.stdout).toMatch(
      /^MachineConfig 51-master-sno-relocate-internal-ip: created; REBOOT: 4 file\(s\) .*\/etc\/sno-relocate\/factory\.json/m,
    );
    expect(r.stdout).toContain('the node reboots once to apply it; then run: sno-relocate factory check');

    const pinned = (await machineConfig('51-master-sno-relocate-internal-ip')).spec.config.storage!.files.find((f) =>
      f.path.endsWith('30-sno-relocate-node-ip.conf'),
    )!;
    expect(Buffer.from(pinned.contents.source.split(',')[1]!, 'base64').toString()).toContain(
      'KUBELET_NODE_IP=192.168.127.10',
    );
    const onNode = readFileSync(path.join(root, 'etc/sno-relocate/factory.json'), 'utf8');
    const inConfig = (await machineConfig('51-master-sno-relocate-internal-ip')).spec.config.storage!.files.find(
      (f) => f.path === '/etc/sno-relocate/factory.json',
    )!;
    expect(Buffer.from(inConfig.contents.source.split(',')[1]!, 'base64').toString()).toBe(onNode);
    const record = JSON.parse(onNode);
    expect(record).toMatchObject({
      node: 'sno-factory',
      installAddress: '192.168.127.10/24',
      installSubnet: '192.168.127.0/24',
      internalIP: '192.168.127.10/24',
    });
    expect(readFileSync(path.join(root, 'var/lib/sno-relocate/kubelet-gate'), 'utf8')).toBe('factory\n');
  });

  it('a second run finds the MachineConfigs in place: nothing to apply, no reboot', async () => {
    const before = (await machineConfig('50-master-sno-relocate')).metadata;
    const r = await prepare([INSTALL_ADDRESS], ['-o', 'json']);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout) as { configs: { name: string; action: string; disruption: string }[] };
    expect(result.configs.map((c) => [c.name, c.action, c.disruption])).toEqual([
      ['50-master-sno-relocate', 'unchanged', 'none'],
      ['51-master-sno-relocate-internal-ip', 'unchanged', 'none'],
    ]);
    expect((await machineConfig('50-master-sno-relocate')).metadata).toEqual(before);
  });

  it('an --image changes only the installer settings: still a reboot, for that one file', async () => {
    const image = `registry.factory.example.com:5000/sno-relocate/agent@sha256:${'c'.repeat(64)}`;
    const r = await prepare([INSTALL_ADDRESS], ['--image', image]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^MachineConfig 50-master-sno-relocate: updated; REBOOT: 1 file\(s\) outside the no-reboot policy \(\/etc\/sno-relocate\/install\.env\)$/m,
    );
    expect(r.stdout).toMatch(/^MachineConfig 51-master-sno-relocate-internal-ip: unchanged/m);
  });

  it("refuses a br-ex whose first address is not the Node's InternalIP, changing nothing", async () => {
    const recordBefore = readFileSync(path.join(root, 'etc/sno-relocate/factory.json'), 'utf8');
    const r = await prepare(['10.1.2.3/24', INSTALL_ADDRESS]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      "br-ex's first address 10.1.2.3/24 is not an InternalIP of Node sno-factory (192.168.127.10)",
    );
    expect(readFileSync(path.join(root, 'etc/sno-relocate/factory.json'), 'utf8')).toBe(recordBefore);
  });

  it('on a dual-stack node, IPv6 primary: one install address per family recorded and pinned, the primary first', async () => {
    const kc = env.cluster.kubeConfig();
    // the Node as kubelet lists a dual-stack node's InternalIPs: its primary family first
    await kc.makeApiClient(CoreV1Api).patchNodeStatus({
      name: 'sno-factory',
      body: [
        {
          op: 'replace',
          path: '/status/addresses',
          value: [
            { type: 'InternalIP', address: 'fd00:127::10' },
            { type: 'InternalIP', address: '192.168.127.10' },
            { type: 'Hostname', address: 'sno-factory' },
          ],
        },
      ],
    });
    // a fresh node: the MachineConfigs of the single-stack runs above pin the IPv4 address alone
    for (const name of ['50-master-sno-relocate', '51-master-sno-relocate-internal-ip'])
      await kc.makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ ...MC, name });
    root = mkdtempSync(path.join(tmpdir(), 'factory-prepare-dual-'));
    const r = await prepare([INSTALL_ADDRESS, 'fd00:127::10/64']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      'node sno-factory: install address fd00:127::10/64 and 192.168.127.10/24 on br-ex are the internal IPs',
    );
    const record = parseRecord(readFileSync(path.join(root, 'etc/sno-relocate/factory.json'), 'utf8'))!;
    expect(recordedFamilies(record).map((f) => [f.installAddress, f.installSubnet, f.internalIP])).toEqual([
      ['fd00:127::10/64', 'fd00:127::/64', 'fd00:127::10/64'],
      ['192.168.127.10/24', '192.168.127.0/24', '192.168.127.10/24'],
    ]);
    const pinned = (await machineConfig('51-master-sno-relocate-internal-ip')).spec.config.storage!.files.find((f) =>
      f.path.endsWith('30-sno-relocate-node-ip.conf'),
    )!;
    expect(Buffer.from(pinned.contents.source.split(',')[1]!, 'base64').toString()).toContain(
      'KUBELET_NODE_IPS=fd00:127::10,192.168.127.10',
    );
  });

  it('names every unmet precondition (one node, OVN-Kubernetes, platform none) and writes nothing', async () => {
    const kc = env.cluster.kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    await kc.makeApiClient(CoreV1Api).createNode({ body: { metadata: { name: 'sno-factory-2' } } });
    const status = (plural: string, value: object) =>
      custom.patchClusterCustomObjectStatus({
        ...CONFIG,
        plural,
        name: 'cluster',
        body: [{ op: 'replace', path: '/status', value }],
      });
    await status('networks', { networkType: 'OpenShiftSDN' });
    await status('infrastructures', { platform: 'BareMetal', platformStatus: { type: 'BareMetal' } });
    const fresh = mkdtempSync(path.join(tmpdir(), 'factory-refused-'));
    const r = runCli(['factory', 'prepare', '--root', fresh, '--kubeconfig', env.cluster.kubeconfigPath]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      'the cluster is not relocatable; unmet: (1) one node: the cluster has 2 (sno-factory, sno-factory-2)',
    );
    expect(r.stderr).toContain('(2) OVN-Kubernetes: network.config/cluster says OpenShiftSDN');
    expect(r.stderr).toContain('(3) platform none: infrastructure.config/cluster says BareMetal');
    expect(existsSync(path.join(fresh, 'etc/sno-relocate/factory.json'))).toBe(false);
    expect(existsSync(path.join(fresh, 'var/lib/sno-relocate/kubelet-gate'))).toBe(false);
  });
});
