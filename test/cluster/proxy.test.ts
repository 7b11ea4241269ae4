/**
 * The proxy step on the real API, through the built executable: the site's trust bundle goes into
 * openshift-config/user-ca-bundle and its proxy into proxy.config/cluster, trustedCA naming the
 * bundle, as the installer writes them; the proxy's password never reaches the plan or the journal;
 * a later site-config without a proxy field clears it, and one without a proxy leaves it alone.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { opensslCa } from '../helpers/openssl.js';
import { runAgentAsync, writeSiteFolder } from '../node/cli.js';
import { pinFactoryNodeName, seedKubeadmin, startFactory, type ClusterEnv } from './env.js';
import { REPO } from '../helpers/cli.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const PASSWORD = 'pr0xy-pa55';
const PROXY_URL = `http://store42:${PASSWORD}@proxy.store42.example.com:3128`;

describe.skipIf(kubeSkipped)('proxy and trust bundle on a real API', () => {
  let env: ClusterEnv;
  let work: string;
  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-proxy-'));
  });
  afterAll(async () => {
    await env?.stop();
  });

  const site = (name: string, spec: Record<string, unknown>, files: Record<string, string> = {}) =>
    writeSiteFolder(
      path.join(work, name),
      'store-0042',
      {
        baseDomain: 'store42.example.com',
        hostname: FACTORY_NODE_NAME,
        network: { nmstate: { interfaces: [] }, internalIP: '192.168.127.10/24' },
        ...spec,
      },
      files,
    );
  const agent = (args: string[], folder: string) =>
    runAgentAsync(
      [
        ...args,
        folder,
        '--only',
        'proxy',
        '--root',
        path.join(work, 'root'),
        '--kubeconfig',
        env.cluster.kubeconfigPath,
      ],
      {},
    );
  const proxySpec = async () =>
    (
      (await env.cluster.kubeConfig().makeApiClient(CustomObjectsApi).getClusterCustomObject({
        group: 'config.openshift.io',
        version: 'v1',
        plural: 'proxies',
        name: 'cluster',
      })) as { spec: Record<string, unknown> }
    ).spec;

  it('writes the bundle, then the proxy naming it; keeps the password out of every line', async () => {
    const ca = opensslCa(work, 'store42-proxy-ca');
    const pem = readFileSync(ca.crt, 'utf8');
    const folder = site(
      'first',
      {
        proxy: { httpProxy: PROXY_URL, httpsProxy: PROXY_URL, noProxy: '.store42.example.com,10.42.0.0/24' },
        trustBundle: { caBundleFile: 'proxy-ca.pem' },
      },
      { 'proxy-ca.pem': pem },
    );
    const plan = await agent(['plan', '-o', 'text'], folder);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('ConfigMap openshift-config/user-ca-bundle');
    expect(plan.stdout).toContain('Proxy cluster');
    expect(plan.stdout).toContain('spec.trustedCA.name: "user-ca-bundle"');
    expect(plan.stdout).toContain('http://store42:<redacted>@proxy.store42.example.com:3128');

    const run = await agent(['run'], folder);
    expect(run.code, run.stderr).toBe(0);
    for (const out of [plan.stdout, plan.stderr, run.stdout, run.stderr]) expect(out).not.toContain(PASSWORD);
    const cm = await env.cluster
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ namespace: 'openshift-config', name: 'user-ca-bundle' });
    expect(cm.data).toEqual({ 'ca-bundle.crt': pem });
    expect(await proxySpec()).toEqual({
      httpProxy: PROXY_URL,
      httpsProxy: PROXY_URL,
      noProxy: '.store42.example.com,10.42.0.0/24',
      trustedCA: { name: 'user-ca-bundle' },
    });
    const again = await agent(['plan', '-o', 'json'], folder);
    expect(JSON.parse(again.stdout).steps).toMatchObject([{ step: 'proxy', action: 'noop' }]);
  });

  it("plans the config media's cluster services on the API: manifest.json to the steps that write them", async () => {
    // the installer's kubeadmin secret, which the hash replaces in place
    await seedKubeadmin(env, 'factory-hash');
    pinFactoryNodeName(path.join(work, 'root'));
    const plan = await runAgentAsync(
      [
        'plan',
        path.join(REPO, 'examples/ibi-config-media'),
        '--only',
        'node-labels,access,proxy',
        '--root',
        path.join(work, 'root'),
        '--kubeconfig',
        env.cluster.kubeconfigPath,
        '-o',
        'json',
      ],
      {},
    );
    expect(plan.code, plan.stderr).toBe(0);
    const steps = (
      JSON.parse(plan.stdout) as { steps: { step: string; action: string; changes: { target: string }[] }[] }
    ).steps;
    expect(steps.map((st) => [st.step, st.action, st.changes.map((c) => c.target)])).toEqual([
      // the Node keeps its factory name: node-name pinned it for kubelet in the node phase
      ['node-labels', 'change', [`Node ${FACTORY_NODE_NAME} label store.example.com/id`]],
      // the media's admin CA becomes the client CA, and the factory's admin kubeconfig is revoked
      [
        'access',
        'change',
        [
          'ConfigMap openshift-config/sno-relocate-admin-client-ca',
          'APIServer cluster',
          'Secret kube-system/kubeadmin',
          'ConfigMap openshift-config/admin-kubeconfig-client-ca',
        ],
      ],
      ['proxy', 'change', ['ConfigMap openshift-config/user-ca-bundle', 'Proxy cluster']],
    ]);
  });

  it('clears what the site leaves out of its proxy, and leaves the proxy alone without one', async () => {
    const https = site('https-only', { proxy: { httpsProxy: 'http://proxy.store42.example.com:3128' } });
    expect((await agent(['run'], https)).code).toBe(0);
    expect(await proxySpec()).toEqual({
      httpsProxy: 'http://proxy.store42.example.com:3128',
      trustedCA: { name: 'user-ca-bundle' },
    });
    const none = site('no-proxy', {});
    const plan = await agent(['plan', '-o', 'json'], none);
    expect(JSON.parse(plan.stdout).steps).toMatchObject([{ step: 'proxy', action: 'noop' }]);
  });
});
