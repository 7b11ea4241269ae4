/**
 * The in-service step on a real kube-apiserver: Deployments, StatefulSets and DaemonSets exist as
 * real objects, and their status is written through the status subresource, as their controllers
 * would (no controller runs here). The console says `done` only once they are ready, and names the
 * first one that is not when the budget runs out.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InService } from '../../src/config/site.js';
import { createBanner } from '../../src/engine/banner.js';
import { runSteps } from '../../src/engine/engine.js';
import { StateStore } from '../../src/engine/state.js';
import { STEPS } from '../../src/steps/index.js';
import { startCluster, type TestCluster } from '../kube/cluster.js';
import { agent, STATE_DIR, storeSite, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const NS = 'vdu';
const podTemplate = (app: string) => ({
  selector: { matchLabels: { app } },
  template: { metadata: { labels: { app } }, spec: { containers: [{ name: app, image: 'registry.example/du:1' }] } },
});

describe.skipIf(kubeSkipped)('in-service step on a real API', () => {
  let cluster: TestCluster;
  let env: ClusterEnv;
  let apps: AppsV1Api;

  beforeAll(async () => {
    cluster = await startCluster();
    env = { cluster, factory: undefined as never, stop: () => cluster.stop() };
    const kc = cluster.kubeConfig();
    apps = kc.makeApiClient(AppsV1Api);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    await apps.createNamespacedDeployment({
      namespace: NS,
      body: { metadata: { name: 'du-app' }, spec: { replicas: 2, ...podTemplate('du-app') } },
    });
    await apps.createNamespacedStatefulSet({
      namespace: NS,
      body: { metadata: { name: 'du-db' }, spec: { replicas: 1, serviceName: 'du-db', ...podTemplate('du-db') } },
    });
    for (const name of ['ptp-a', 'ptp-b'])
      await apps.createNamespacedDaemonSet({
        namespace: NS,
        body: { metadata: { name, labels: { role: 'ptp' } }, spec: podTemplate(name) },
      });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  const spec = (timeoutSeconds: number): InService => ({
    workloads: [
      { kind: 'Deployment', namespace: NS, name: 'du-app' },
      { kind: 'StatefulSet', namespace: NS, name: 'du-db' },
      { kind: 'DaemonSet', namespace: NS, selector: 'role=ptp' },
    ],
    timeoutSeconds,
  });

  /** what each controller writes once its pods run: generation observed, replicas updated and available */
  const rollOut = {
    deployment: async () => {
      const d = await apps.readNamespacedDeployment({ namespace: NS, name: 'du-app' });
      d.status = {
        observedGeneration: d.metadata!.generation!,
        replicas: 2,
        updatedReplicas: 2,
        readyReplicas: 2,
        availableReplicas: 2,
      };
      await apps.replaceNamespacedDeploymentStatus({ namespace: NS, name: 'du-app', body: d });
    },
    statefulSet: async () => {
      const s = await apps.readNamespacedStatefulSet({ namespace: NS, name: 'du-db' });
      s.status = {
        observedGeneration: s.metadata!.generation!,
        replicas: 1,
        readyReplicas: 1,
        updatedReplicas: 1,
        currentRevision: 'du-db-1',
        updateRevision: 'du-db-1',
      };
      await apps.replaceNamespacedStatefulSetStatus({ namespace: NS, name: 'du-db', body: s });
    },
    daemonSet: async (name: string, available: number) => {
      const d = await apps.readNamespacedDaemonSet({ namespace: NS, name });
      d.status = {
        observedGeneration: d.metadata!.generation!,
        currentNumberScheduled: 1,
        desiredNumberScheduled: 1,
        numberMisscheduled: 0,
        numberReady: available,
        updatedNumberScheduled: 1,
        numberAvailable: available,
      };
      await apps.replaceNamespacedDaemonSetStatus({ namespace: NS, name, body: d });
    },
  };

  async function run(timeoutSeconds: number, stableSeconds = 1) {
    const a = await agent(env, storeSite({ inService: spec(timeoutSeconds) }), undefined, undefined, {
      healthStableSeconds: stableSeconds,
    });
    const console = path.join(mkdtempSync(path.join(tmpdir(), 'in-service-console-')), 'console');
    const result = runSteps({
      steps: STEPS,
      selected: new Set(['in-service']),
      ctx: a.ctx,
      store: new StateStore(a.ctx.fs, STATE_DIR),
      banner: createBanner(console),
      configHash: 'in-service-test',
    });
    return { a, result, console: () => readFileSync(console, 'utf8') };
  }

  it('plans a wait for every workload not rolled out yet, naming why', async () => {
    const a = await agent(env, storeSite({ inService: spec(60) }));
    const plan = await a.plan(['in-service']);
    expect(plan).toEqual([
      expect.objectContaining({
        step: 'in-service',
        action: 'change',
        changes: [
          {
            action: 'apply',
            target: `Deployment ${NS}/du-app`,
            summary: 'wait until ready: its controller has not seen the latest spec yet',
          },
          expect.objectContaining({ target: `StatefulSet ${NS}/du-db` }),
          expect.objectContaining({ target: `DaemonSet ${NS}/ptp-a` }),
          expect.objectContaining({ target: `DaemonSet ${NS}/ptp-b` }),
        ],
      }),
    ]);
  });

  it('fails when the budget runs out, naming the first workload not ready, and the console never says done', async () => {
    await rollOut.deployment();
    const { result, console } = await run(10);
    await expect(result).rejects.toThrow(
      `in-service: StatefulSet ${NS}/du-db not ready after 10s: its controller has not seen the latest spec yet (and 2 more)`,
    );
    expect(console()).toContain(`FAILED: in-service: StatefulSet ${NS}/du-db not ready after 10s`);
    expect(console()).not.toContain('done');
  });

  it('says done once the controllers report every workload ready, and not before', async () => {
    const { a, result, console } = await run(120);
    await rollOut.statefulSet();
    await rollOut.daemonSet('ptp-a', 1);
    // one DaemonSet matched by the label is still not available: the run keeps waiting
    await rollOut.daemonSet('ptp-b', 0);
    let settled = false;
    void result.then(
      () => (settled = true),
      () => (settled = true),
    );
    await expect.poll(() => a.logs.some((l) => l.includes(`DaemonSet ${NS}/ptp-b`)), { timeout: 30_000 }).toBe(true);
    expect(settled).toBe(false);
    await rollOut.daemonSet('ptp-b', 1);
    const state = await result;
    expect(state.result).toBe('succeeded');
    expect(console().trim().split('\n').at(-1)).toBe('sno-relocate: done: site store-0042 is configured');
  });

  it('readiness reported before the run counts only once seen holding: a workload that goes unready after the run started is waited for', async () => {
    // every workload ready, as reported before this run started
    await rollOut.deployment();
    await rollOut.statefulSet();
    await rollOut.daemonSet('ptp-a', 1);
    await rollOut.daemonSet('ptp-b', 1);
    const STABLE = 10;
    const { a, result } = await run(120, STABLE);
    let finished: number | undefined;
    void result.then(
      () => (finished = Date.now()),
      () => (finished = Date.now()),
    );
    // its kubelet restarted with the run: the DaemonSet's pod is not available for a while
    await rollOut.daemonSet('ptp-b', 0);
    await expect.poll(() => a.logs.some((l) => l.includes(`DaemonSet ${NS}/ptp-b`)), { timeout: 30_000 }).toBe(true);
    expect(finished, 'in-service said done while ptp-b was not available').toBeUndefined();
    const back = Date.now();
    await rollOut.daemonSet('ptp-b', 1);
    const state = await result;
    expect(state.result).toBe('succeeded');
    expect(Date.parse(state.finishedAt!)).toBeGreaterThanOrEqual(back + (STABLE - 1) * 1000);
  }, 180_000);
});
