/**
 * One stability window, not two: health watches the site's own workloads through its window, so a
 * store's app that was ready through all of it is not watched for a second window by in-service
 * (docs/performance.md, site time). An app that was not ready through health's window still is.
 */
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const CO = { group: 'config.openshift.io', version: 'v1', plural: 'clusteroperators' };
const STABLE_SECONDS = 3;
const APP = { namespace: 'store-app', name: 'pos' };
const LONG_AGO = '2026-01-10T08:00:00Z';
const settled = {
  conditions: [
    ['Available', 'True'],
    ['Progressing', 'False'],
    ['Degraded', 'False'],
  ].map(([type, status]) => ({ type, status, reason: 'AsExpected', message: '', lastTransitionTime: LONG_AGO })),
};

describe.skipIf(kubeSkipped)("health's stability window covers the site's workloads", () => {
  let env: ClusterEnv;
  let apps: AppsV1Api;

  /** the app as its controller reports it: ready, or its one replica not available */
  const report = async (ready: boolean) => {
    const d = await apps.readNamespacedDeployment(APP);
    d.status = {
      observedGeneration: d.metadata!.generation!,
      replicas: 1,
      updatedReplicas: 1,
      readyReplicas: ready ? 1 : 0,
      availableReplicas: ready ? 1 : 0,
    };
    await apps.replaceNamespacedDeploymentStatus({ ...APP, body: d });
  };

  beforeAll(async () => {
    env = await startFactory({ models: false });
    const kc = env.cluster.kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const { items } = (await custom.listClusterCustomObject(CO)) as { items: { metadata: { name: string } }[] };
    for (const co of items)
      await custom.patchClusterCustomObjectStatus({
        ...CO,
        name: co.metadata.name,
        body: [{ op: 'add', path: '/status', value: settled }],
      });
    apps = kc.makeApiClient(AppsV1Api);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: APP.namespace } } });
    const labels = { app: APP.name };
    await apps.createNamespacedDeployment({
      namespace: APP.namespace,
      body: {
        metadata: { name: APP.name },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'pos', image: 'registry.example/pos:1' }] } },
        },
      },
    });
  });
  afterAll(async () => {
    await env?.stop();
  });

  const site = storeSite({ inService: { workloads: [{ kind: 'Deployment', ...APP }], timeoutSeconds: 60 } });

  const relocate = async () => {
    const a = await agent(env, site, undefined, undefined, {
      healthStableSeconds: STABLE_SECONDS,
      healthTimeoutSeconds: 60,
    });
    const state = await a.run(['health', 'in-service']);
    expect(state.result).toBe('succeeded');
    return state.steps['in-service']!;
  };

  it('in-service finds nothing left to watch for an app that was ready through health’s window', async () => {
    await report(true);
    const step = await relocate();
    expect(step.status).toBe('done');
    // no change planned: neither a wait nor a second window
    expect(step.attempts).toBe(0);
  }, 60_000);

  it('an app that was not ready through health’s window is still watched through a window of its own', async () => {
    await report(false);
    let ready: Promise<void> | undefined;
    const a = await agent(
      env,
      site,
      undefined,
      (entry) => {
        // the app turns ready only once health is done
        if (entry.step === 'health' && entry.event === 'stepFinished') ready = report(true);
      },
      { healthStableSeconds: STABLE_SECONDS, healthTimeoutSeconds: 60 },
    );
    const state = await a.run(['health', 'in-service']);
    await ready;
    expect(state.result).toBe('succeeded');
    const step = state.steps['in-service']!;
    expect(step.attempts).toBe(1);
    expect(step.durationMs).toBeGreaterThanOrEqual((STABLE_SECONDS - 1) * 1000);
  }, 60_000);
});
