/**
 * What a relocation costs the control plane, counted by the models (test/cluster/models/ledger.ts):
 * each count is the minimum the site's changes require, and this test fails if one grows.
 *
 * - a site that changes the domain, pull secret, mirrors, client CA and kubeadmin: one kube-apiserver
 *   revision installed (one API outage), one openshift-apiserver rollout, one router rollout, no reboot;
 * - then a proxy and trust bundle: one reboot, and the kube-apiserver revision the proxy makes,
 *   installed before the proxy step is done.
 *
 * The router rolls out for longer than the kube-apiserver's installer runs, as on a real node (about
 * a minute against half a minute), so the OAuth route admitted on its new host only after the new
 * router is up is what decides whether the OAuth metadata lands in the same revision.
 */
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolloutsOf } from '../../src/cli/render-plan.js';
import { describeRollouts } from '../../src/kube/rollout-costs.js';
import { revisionUnsettled } from '../../src/kube/rollout.js';
import { opensslCa } from '../helpers/openssl.js';
import { agent, CLUSTER_PHASE, seedKubeadmin, startFactory, storeSite, type ClusterEnv } from './env.js';
import { OPERAND_NAMESPACE } from './models/kube-apiserver-operator.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const SITE_HASH = '$2b$12$KIXQJ9u3x0H1lV3Y9Dq2vO7vK7m2bS5rM0b3hC2v1Qe0mJ8pTzq6W';
const PROXY_URL = 'http://proxy.store42.example.com:3128';

describe.skipIf(kubeSkipped)('what a relocation costs the control plane', () => {
  let env: ClusterEnv;
  let root: string;
  let work: string;
  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-rollouts-'));
    // the installer's window is wide enough that a loaded machine's API latency stays well inside it,
    // and the router's rollout still twice as long, as on a real node
    env = await startFactory({
      modelOptions: { installerMs: 8000, times: { router: { shutdownMs: 0, startMs: 16_000 } }, renderDelayMs: 1000 },
    });
    // the installer's kubeadmin secret, made with the cluster
    await seedKubeadmin(env, 'factory');
  });
  afterAll(async () => {
    await env?.stop();
  });

  const counts = (from: number) => {
    const l = env.models!.ledger;
    return {
      'kube-apiserver': l.count('kube-apiserver', from),
      'kube-apiserver revisions made': l.count('kube-apiserver-revision', from),
      'oauth-server': l.count('oauth-server', from),
      'openshift-apiserver': l.count('openshift-apiserver', from),
      router: l.count('router', from),
      reboot: l.count('reboot', from),
      'kube-apiserver-fallback': l.count('kube-apiserver-fallback', from),
    };
  };

  it('domain, pull secret, mirrors, client CA and kubeadmin: one kube-apiserver revision, one openshift-apiserver and one router rollout, no reboot', async () => {
    const clientCa = readFileSync(opensslCa(work, 'store42-admins').crt, 'utf8');
    const site = storeSite({ access: { clientCaPem: clientCa, kubeadminPasswordHash: SITE_HASH } });
    const a = await agent(env, site, undefined, undefined, { healthTimeoutSeconds: 120 });
    root = a.root;
    // plan tells the technician beforehand what the models then count
    expect(describeRollouts(rolloutsOf(await a.plan([...CLUSTER_PHASE, 'health'])))).toBe(
      '1 kube-apiserver revision (~90s each), 1 openshift-apiserver rollout (~80s each), 2 oauth-server rollouts (~45s each), 1 router rollout (~60s each): about 6 min',
    );
    const from = env.models!.ledger.entries.length;
    const state = await a.run([...CLUSTER_PHASE, 'health']);
    expect(state.result).toBe('succeeded');
    await env.models!.settled();
    // the OAuth server rolls out for the componentRoute, then again for the issuer once the new
    // router admits it; when the router is quicker than the first rollout's start (a loaded
    // machine), one rollout takes both: at most two
    const ledger = env.models!.ledger.since(from);
    const { 'oauth-server': oauth, ...others } = counts(from);
    expect(oauth, ledger).toBeGreaterThanOrEqual(1);
    expect(oauth, ledger).toBeLessThanOrEqual(2);
    // the OAuth metadata and the named certificate make a revision each, or one when the operator
    // sees both in one pass; either way they are installed together
    const { 'kube-apiserver revisions made': made, ...restarts } = others;
    expect(made, ledger).toBeLessThanOrEqual(2);
    expect(restarts, ledger).toEqual({
      'kube-apiserver': 1,
      'openshift-apiserver': 1,
      router: 1,
      reboot: 0,
      'kube-apiserver-fallback': 0,
    });
  }, 300_000);

  it('proxy and trust bundle: one reboot, and the proxy’s kube-apiserver revision installed before the proxy step is done', async () => {
    const bundle = readFileSync(opensslCa(work, 'store42-proxy-ca').crt, 'utf8');
    const site = storeSite({
      proxy: { httpProxy: PROXY_URL, httpsProxy: PROXY_URL, noProxy: '.store42.example.com' },
      trustBundle: { caBundlePem: bundle, proxyTrustedCA: true },
    });
    const a = await agent(env, site, root, undefined, { healthTimeoutSeconds: 120 });
    expect(describeRollouts(rolloutsOf(await a.plan(CLUSTER_PHASE)))).toBe(
      '1 kube-apiserver revision (~90s each), 1 openshift-apiserver rollout (~80s each), 1 oauth-server rollout (~45s each), 1 reboot (~600s each): about 14 min',
    );
    const from = env.models!.ledger.entries.length;
    const state = await a.run(CLUSTER_PHASE);
    expect(state.result).toBe('succeeded');
    // when the run's writes are done, the kube-apiserver runs the revision with the proxy
    const kc = env.cluster.kubeConfig();
    const status = (
      (await kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({
        group: 'operator.openshift.io',
        version: 'v1',
        plural: 'kubeapiservers',
        name: 'cluster',
      })) as { status: { nodeStatuses: { currentRevision: number }[] } }
    ).status;
    const pod = await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({
      namespace: OPERAND_NAMESPACE,
      name: `kube-apiserver-pod-${status.nodeStatuses[0]!.currentRevision}`,
    });
    expect(pod.data!['pod.yaml']).toContain(PROXY_URL);
    await env.models!.settled();
    expect(counts(from), env.models!.ledger.since(from)).toEqual({
      'kube-apiserver': 1,
      'kube-apiserver revisions made': 1,
      'oauth-server': 1,
      'openshift-apiserver': 1,
      router: 0,
      reboot: 1,
      'kube-apiserver-fallback': 0,
    });
  }, 300_000);
  it('a revision whose kube-apiserver does not start falls back, and health names it', async () => {
    const kc = env.cluster.kubeConfig();
    const one = opensslCa(work, 'broken-one');
    const other = opensslCa(work, 'broken-other');
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: 'openshift-config',
      body: {
        metadata: { name: 'mismatched-api' },
        type: 'kubernetes.io/tls',
        data: {
          'tls.crt': readFileSync(one.crt).toString('base64'),
          'tls.key': readFileSync(other.key).toString('base64'),
        },
      },
    });
    const from = env.models!.ledger.entries.length;
    await kc.makeApiClient(CustomObjectsApi).patchClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'apiservers',
      name: 'cluster',
      body: [
        {
          op: 'add',
          path: '/spec/servingCerts/namedCertificates/-',
          value: { names: ['api.broken.example.com'], servingCertificate: { name: 'mismatched-api' } },
        },
      ],
    });
    await env.models!.settled();
    expect(env.models!.ledger.count('kube-apiserver-fallback', from)).toBe(1);
    const a = await agent(env, storeSite(), root);
    expect(await revisionUnsettled(a.kube, 'api.sno.store42.example.com')).toContainEqual(
      expect.stringMatching(/^kube-apiserver revision \d+ failed$/),
    );
  }, 120_000);
});

describe.skipIf(kubeSkipped)('a Route of the extra manifests, created after the openshift-apiserver rolled out', () => {
  let env: ClusterEnv;
  beforeAll(async () => {
    // the openshift-apiserver's old pod serves out its shutdown delay (50 s upstream) past the router's
    // rollout, after which the domain step is done; the route API is served by aggregation, so it
    // answers 503 while no openshift-apiserver pod runs
    env = await startFactory({
      aggregatedRoutes: true,
      modelOptions: { times: { openshiftApiServer: { shutdownMs: 12000, startMs: 2000 } } },
    });
  });
  afterAll(async () => {
    await env?.stop();
  });

  it("gets its generated host under the site's domain, and the openshift-apiserver rolled out once", async () => {
    const route = {
      apiVersion: 'route.openshift.io/v1',
      kind: 'Route',
      metadata: { name: 'catalog', namespace: 'shop-app' },
      spec: { to: { kind: 'Service', name: 'catalog', weight: 100 } },
    };
    const site = storeSite({ extraManifests: [{ file: 'extra-manifests/50-catalog.yaml', index: 0, object: route }] });
    const a = await agent(env, site, undefined, undefined, { healthTimeoutSeconds: 120 });
    const from = env.models!.ledger.entries.length;
    const state = await a.run(['domain', 'extra-manifests']);
    expect(state.result).toBe('succeeded');
    await env.models!.settled();
    const catalog = (await env.cluster.kubeConfig().makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'route.openshift.io',
      version: 'v1',
      plural: 'routes',
      namespace: 'shop-app',
      name: 'catalog',
    })) as { spec: { host?: string } };
    expect(catalog.spec.host).toBe('catalog-shop-app.apps.sno.store42.example.com');
    expect(env.models!.ledger.count('openshift-apiserver', from)).toBe(1);
  }, 300_000);
});
