/**
 * Health relies only on what the run saw itself: ClusterOperators that all report Available from
 * before the run do not make it done at once. An operator that goes Progressing once the run has
 * started (as OpenShift's operators do a moment after the domain step's writes) keeps the run
 * from being done until it is back and has held through the stability window. The agent's own
 * ClusterOperator (`sno-relocate`, which release-upgrades turns Upgradeable=True after health) is
 * not an operator settling: a rerun right after a finished move has nothing to watch.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markConditions } from '../../src/kube/hold-mark.js';
import { RELEASE_REASON } from '../../src/steps/release-upgrades.js';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const CO = { group: 'config.openshift.io', version: 'v1', plural: 'clusteroperators' };
const STABLE_SECONDS = 15;
const LONG_AGO = '2026-01-10T08:00:00Z';

const condition = (type: string, status: string, at: string) => ({
  type,
  status,
  reason: 'AsExpected',
  message: '',
  lastTransitionTime: at,
});
const operatorStatus = (progressing: boolean, at: string) => ({
  conditions: [
    condition('Available', 'True', LONG_AGO),
    condition('Progressing', progressing ? 'True' : 'False', at),
    condition('Degraded', 'False', LONG_AGO),
  ],
});

describe.skipIf(kubeSkipped)('health against status from before the run', () => {
  let env: ClusterEnv;
  let custom: CustomObjectsApi;
  const setStatus = (name: string, status: object) =>
    custom.patchClusterCustomObjectStatus({ ...CO, name, body: [{ op: 'add', path: '/status', value: status }] });

  beforeAll(async () => {
    env = await startFactory({ models: false });
    custom = env.cluster.kubeConfig().makeApiClient(CustomObjectsApi);
    // every operator Available, not Progressing, not Degraded, and so since long before the run
    const { items } = (await custom.listClusterCustomObject(CO)) as { items: { metadata: { name: string } }[] };
    for (const co of items) await setStatus(co.metadata.name, operatorStatus(false, LONG_AGO));
  });
  afterAll(async () => {
    await env?.stop();
  });

  it('is not done before an operator that went Progressing after the run started is back and has held', async () => {
    let progressing: Promise<unknown> | undefined;
    const a = await agent(
      env,
      storeSite(),
      undefined,
      (entry) => {
        // a write of the run's own time: the ingress operator reacting to the run
        if (entry.step === 'health' && entry.event === 'stepStarted')
          progressing = setStatus('ingress', operatorStatus(true, new Date().toISOString().replace(/\.\d+Z$/, 'Z')));
      },
      { healthStableSeconds: STABLE_SECONDS, healthTimeoutSeconds: 120 },
    );
    const run = a.run(['health']);
    let finished: number | undefined;
    void run.then(() => (finished = Date.now()));
    await expect.poll(() => progressing, { timeout: 30_000 }).toBeDefined();
    await progressing;
    expect(finished, 'health reported done while the ingress operator was Progressing').toBeUndefined();
    const back = Date.now();
    await setStatus('ingress', operatorStatus(false, new Date(back).toISOString().replace(/\.\d+Z$/, 'Z')));
    const state = await run;
    expect(state.result).toBe('succeeded');
    expect(state.steps.health?.status).toBe('done');
    // done only after the operator was back and the window held from then
    expect(Date.parse(state.finishedAt!)).toBeGreaterThanOrEqual(back + (STABLE_SECONDS - 1) * 1000);
  }, 180_000);

  it("a rerun after the move has nothing to do: the agent's own release of upgrades, after health, is no operator change", async () => {
    const entries: { step?: string; event?: string }[] = [];
    const a = await agent(env, storeSite(), undefined, (e) => entries.push(e), {
      healthStableSeconds: STABLE_SECONDS,
      healthTimeoutSeconds: 120,
    });
    const first = await a.run(['health']);
    expect(first.steps.health?.status).toBe('done');
    // release-upgrades' write, seconds after health was done (in-service waits between them at a site)
    const released = new Date(Date.parse(first.steps.health!.finishedAt!) + 5_000).toISOString();
    await custom.createClusterCustomObject({
      ...CO,
      body: {
        apiVersion: 'config.openshift.io/v1',
        kind: 'ClusterOperator',
        metadata: { name: 'sno-relocate' },
        spec: {},
      },
    });
    await setStatus('sno-relocate', {
      conditions: markConditions(released.replace(/\.\d+Z$/, 'Z'), {
        status: 'True',
        reason: RELEASE_REASON,
        message: 'moved',
      }),
    });
    entries.length = 0;
    const second = await a.run(['health']);
    expect(second.result).toBe('succeeded');
    expect(entries.filter((e) => e.step === 'health').map((e) => e.event)).toContain('stepSkipped');
  }, 180_000);
});
