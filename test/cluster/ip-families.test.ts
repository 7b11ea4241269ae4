/**
 * The plan-time IP family check on the real API, through the built executable: the cluster's
 * Network config (config.openshift.io/v1, the CRD the installer applies) lists IPv6 first, so a
 * site-config listing its internal IPs IPv4 first is refused (exit 3) naming both orders, and one
 * listing IPv6 first plans nothing to do.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { runAgentAsync, writeSiteFolder } from '../node/cli.js';
import { startFactory, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';

describe.skipIf(kubeSkipped)('IP families against the Network config on a real API', () => {
  let env: ClusterEnv;
  let work: string;
  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-families-'));
    // an IPv6-primary dual-stack cluster, as install-config's networking section makes it
    await env.cluster
      .kubeConfig()
      .makeApiClient(CustomObjectsApi)
      .createClusterCustomObject({
        group: 'config.openshift.io',
        version: 'v1',
        plural: 'networks',
        body: {
          apiVersion: 'config.openshift.io/v1',
          kind: 'Network',
          metadata: { name: 'cluster' },
          spec: {
            clusterNetwork: [
              { cidr: 'fd01::/48', hostPrefix: 64 },
              { cidr: '10.128.0.0/14', hostPrefix: 23 },
            ],
            serviceNetwork: ['fd02::/112', '172.30.0.0/16'],
            networkType: 'OVNKubernetes',
          },
        },
      });
  });
  afterAll(async () => {
    await env?.stop();
  });

  const plan = (name: string, internalIP: string[], machineNetworks: string[]) =>
    runAgentAsync(
      [
        'plan',
        writeSiteFolder(path.join(work, name), 'store-0042', {
          baseDomain: 'store42.example.com',
          hostname: FACTORY_NODE_NAME,
          network: { nmstate: { interfaces: [] }, internalIP, machineNetworks },
        }),
        '--only',
        'ip-families',
        '--root',
        path.join(work, 'root'),
        '--kubeconfig',
        env.cluster.kubeconfigPath,
        '-o',
        'json',
      ],
      {},
    );

  it('refuses internal IPs listed IPv4 first, naming both orders', async () => {
    const refused = await plan('v4-first', ['192.168.127.10/24', 'fd69::10/64'], ['10.42.0.0/24', 'fd00:42::/64']);
    expect(refused.code, refused.stderr).toBe(3);
    expect(refused.stdout + refused.stderr).toContain(
      "spec.network.internalIP is IPv4, IPv6 and spec.network.machineNetworks is IPv4, IPv6, but the cluster's Network config (spec.clusterNetwork) is IPv6, IPv4",
    );
  });

  it('plans nothing to do for the cluster order', async () => {
    const ok = await plan('v6-first', ['fd69::10/64', '192.168.127.10/24'], ['fd00:42::/64', '10.42.0.0/24']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).steps).toEqual([
      expect.objectContaining({ step: 'ip-families', action: 'noop', reason: expect.stringContaining('IPv6, IPv4') }),
    ]);
  });
});
