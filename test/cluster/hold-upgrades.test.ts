/**
 * Nothing else moves the cluster while the agent does, on a real API with the ClusterVersion,
 * MachineConfigPool and lifecycle agent CRDs: an update or a pool roll-out is waited for (bounded)
 * and refused when it goes on; a degraded pool, an image-based upgrade or an IPConfig in progress
 * is refused at once; a refusal writes nothing. While the agent runs, ClusterOperator sno-relocate
 * says Upgradeable=False with its reason, as the cluster-version operator reads it, and the last
 * step turns it to Upgradeable=True.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RefusedError } from '../../src/base/errors.js';
import { CLUSTER_VERSION, IMAGE_BASED_UPGRADE, IP_CONFIG, type Condition } from '../../src/kube/cluster-motion.js';
import type { Kube, KubeObject, ObjectRef } from '../../src/ports/kube.js';
import { HOLD_MARK, HOLD_REASON } from '../../src/kube/hold-mark.js';
import { RELEASE_REASON } from '../../src/steps/release-upgrades.js';
import { applyCrds } from '../kube/install.js';
import { agent, startFactory, storeSite, type Agent, type ClusterEnv, type LogEntry } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const LCA_CRDS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lca-crds');
const MASTER_POOL: ObjectRef = {
  apiVersion: 'machineconfiguration.openshift.io/v1',
  kind: 'MachineConfigPool',
  name: 'master',
};

type WithConditions = KubeObject & { status?: { conditions?: (Condition & { lastTransitionTime?: string })[] } };

/** Sets one condition of an object's status, as its operator would. */
async function setCondition(kube: Kube, ref: ObjectRef, type: string, status: string, message = ''): Promise<void> {
  await kube.updateStatus<WithConditions>(ref, (obj) => ({
    ...obj,
    status: {
      ...obj.status,
      conditions: [
        ...(obj.status?.conditions ?? []).filter((c) => c.type !== type),
        {
          type,
          status,
          reason: status === 'True' ? 'InProgress' : 'AsExpected',
          message,
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      ],
    },
  }));
}

/** A lifecycle agent singleton at `stage`, its conditions as the lifecycle agent sets them for it. */
async function lifecycle(kube: Kube, ref: ObjectRef, stage: string, conditions: Condition[]): Promise<void> {
  await kube.create({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name }, spec: { stage } });
  await kube.updateStatus<WithConditions>(ref, (obj) => ({
    ...obj,
    status: { conditions: conditions.map((c) => ({ ...c, lastTransitionTime: '2026-01-01T00:00:00Z' })) },
  }));
}

const upgradeable = async (kube: Kube) =>
  (await kube.get<WithConditions>(HOLD_MARK))?.status?.conditions?.find((c) => c.type === 'Upgradeable');

describe.skipIf(kubeSkipped)('hold-upgrades and release-upgrades on a real API', () => {
  let env: ClusterEnv;
  let a: Agent;
  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    await applyCrds(env.cluster.kubeconfigPath, { dir: LCA_CRDS });
    a = await agent(env, storeSite(), undefined, undefined, { busyWaitSeconds: 2 });
  }, 120_000);
  afterAll(async () => {
    await env?.stop();
  });
  afterEach(async () => {
    // the cluster at rest again for the next case
    await setCondition(a.kube, CLUSTER_VERSION, 'Progressing', 'False');
    await setCondition(a.kube, MASTER_POOL, 'Updating', 'False');
    await setCondition(a.kube, MASTER_POOL, 'Degraded', 'False');
    for (const ref of [IMAGE_BASED_UPGRADE, IP_CONFIG, HOLD_MARK]) await a.kube.delete(ref);
  });

  /** runs hold-upgrades on a fresh root; the refusal's message, or undefined when it passed */
  const hold = async (onLog?: (entry: LogEntry) => void, busyWaitSeconds = 2): Promise<string | undefined> => {
    const run = await agent(env, storeSite(), undefined, onLog, { busyWaitSeconds });
    try {
      await run.run(['hold-upgrades']);
      return undefined;
    } catch (err) {
      expect(err).toBeInstanceOf(RefusedError);
      return (err as Error).message;
    }
  };

  it('holds upgrades with a reason while the agent runs, and releases them at the end', async () => {
    expect(await hold()).toBeUndefined();
    expect(await upgradeable(a.kube)).toMatchObject({
      status: 'False',
      reason: HOLD_REASON,
      message: expect.stringContaining('moving this cluster to site store-0042'),
    });
    // still Available, not Progressing, not Degraded: the health step and the watcher see nothing wrong
    const mark = await a.kube.get<WithConditions>(HOLD_MARK);
    expect(Object.fromEntries((mark?.status?.conditions ?? []).map((c) => [c.type, c.status]))).toMatchObject({
      Available: 'True',
      Progressing: 'False',
      Degraded: 'False',
    });
    const state = await a.run(['release-upgrades']);
    expect(state.steps['release-upgrades']).toMatchObject({ status: 'done' });
    expect(await upgradeable(a.kube)).toMatchObject({
      status: 'True',
      reason: RELEASE_REASON,
      message: 'sno-relocate moved this cluster to site store-0042',
    });
    // a rerun of the same site-config finds nothing to do, and holds nothing
    const rerun = await a.run(['hold-upgrades', 'release-upgrades']);
    expect(rerun.steps['hold-upgrades']?.message).toBe('the move to this site-config finished and released upgrades');
    expect(await upgradeable(a.kube)).toMatchObject({ status: 'True', reason: RELEASE_REASON });
  });

  it('release turns Upgradeable only: the conditions that keep their status keep their transition time', async () => {
    expect(await hold()).toBeUndefined();
    // held since the first of January, as the cluster-version operator would have read it
    const since = '2026-01-01T00:00:00Z';
    await a.kube.updateStatus<WithConditions>(HOLD_MARK, (co) => ({
      ...co,
      status: { conditions: co.status!.conditions!.map((c) => ({ ...c, lastTransitionTime: since })) },
    }));
    await a.run(['release-upgrades']);
    const conditions = (await a.kube.get<WithConditions>(HOLD_MARK))!.status!.conditions!;
    expect(Object.fromEntries(conditions.map((c) => [c.type, [c.status, c.lastTransitionTime === since]]))).toEqual({
      Available: ['True', true],
      Progressing: ['False', true],
      Degraded: ['False', true],
      Upgradeable: ['True', false],
    });
  });

  it('waits for a ClusterVersion update that finishes by itself, then holds', async () => {
    await setCondition(a.kube, CLUSTER_VERSION, 'Progressing', 'True', 'Working towards 4.16.9');
    // the update finishes once the agent says it waits for it
    const refused = await hold((entry) => {
      if (entry.msg.startsWith('waiting for the cluster to settle'))
        void setCondition(a.kube, CLUSTER_VERSION, 'Progressing', 'False');
    }, 60);
    expect(refused).toBeUndefined();
    expect(await upgradeable(a.kube)).toMatchObject({ status: 'False', reason: HOLD_REASON });
  });

  it('refuses a ClusterVersion update still going after the bound, and writes nothing', async () => {
    await setCondition(a.kube, CLUSTER_VERSION, 'Progressing', 'True', 'Working towards 4.16.9');
    const refused = await hold();
    expect(refused).toMatch(
      /ClusterVersion version is Progressing \(InProgress: Working towards 4\.16\.9\).*still so after waiting \d+ s/,
    );
    expect(await a.kube.get(HOLD_MARK)).toBeUndefined();
  });

  it('refuses a pool roll-out still going after the bound', async () => {
    await setCondition(a.kube, MASTER_POOL, 'Updating', 'True', 'All nodes are updating to rendered-master-site');
    expect(await hold()).toContain(
      'MachineConfigPool master is Updating (InProgress: All nodes are updating to rendered-master-site)',
    );
    expect(await a.kube.get(HOLD_MARK)).toBeUndefined();
  });

  it('refuses a degraded pool at once, without waiting', async () => {
    await setCondition(a.kube, MASTER_POOL, 'Degraded', 'True', 'Node sno is reporting: unexpected on-disk state');
    const waited: string[] = [];
    const refused = await hold((entry) => {
      if (entry.msg.startsWith('waiting for the cluster to settle')) waited.push(entry.msg);
    }, 600);
    expect(refused).toContain('MachineConfigPool master is Degraded');
    expect(refused).not.toContain('still so after waiting');
    expect(waited).toEqual([]);
    expect(await a.kube.get(HOLD_MARK)).toBeUndefined();
  });

  it('refuses an image-based upgrade in progress, naming its stage', async () => {
    await lifecycle(a.kube, IMAGE_BASED_UPGRADE, 'Prep', [
      { type: 'Idle', status: 'False', reason: 'InProgress', message: 'In progress' },
      { type: 'PrepInProgress', status: 'True', reason: 'InProgress', message: 'Pulling the seed image' },
    ]);
    expect(await hold(undefined, 600)).toContain(
      'ImageBasedUpgrade upgrade is in stage Prep (InProgress: Pulling the seed image): finish or abort it (spec.stage: Idle) first',
    );
    expect(await a.kube.get(HOLD_MARK)).toBeUndefined();
  });

  it('refuses an IPConfig in progress, also when a resumed run holds upgrades already', async () => {
    expect(await hold()).toBeUndefined();
    await lifecycle(a.kube, IP_CONFIG, 'Config', [
      { type: 'Idle', status: 'False', reason: 'InProgress', message: 'In progress' },
      { type: 'ConfigInProgress', status: 'True', reason: 'InProgress', message: 'Applying the new IP' },
    ]);
    expect(await hold()).toContain('IPConfig ipconfig is in stage Config (InProgress: Applying the new IP)');
  });

  it('goes on past idle lifecycle objects, and past its own roll-out when resumed', async () => {
    await lifecycle(a.kube, IMAGE_BASED_UPGRADE, 'Idle', [
      { type: 'Idle', status: 'True', reason: 'Idle', message: 'Idle' },
    ]);
    await lifecycle(a.kube, IP_CONFIG, 'Idle', [{ type: 'Idle', status: 'True', reason: 'Idle', message: 'Idle' }]);
    expect(await hold()).toBeUndefined();
    // the pull secret's roll-out of the master pool, after a power cut: the agent's own doing
    await setCondition(a.kube, MASTER_POOL, 'Updating', 'True', 'All nodes are updating to rendered-master-site');
    expect(await hold()).toBeUndefined();
    expect(await upgradeable(a.kube)).toMatchObject({ status: 'False', reason: HOLD_REASON });
  });
});
