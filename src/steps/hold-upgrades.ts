/**
 * [hold-upgrades] Nothing else moves the cluster while the agent does. Before the first cluster
 * change it refuses an image-based upgrade or IPConfig in progress, a degraded MachineConfigPool,
 * and (after waiting, bounded, for them to finish by themselves) a ClusterVersion update or a pool
 * roll-out. Then it marks the cluster as operators do: ClusterOperator `sno-relocate` with
 * Upgradeable=False and a reason, which the cluster-version operator reads from every
 * ClusterOperator (pkg/cvo/upgradeable.go, clusterOperatorsUpgradeable), so `oc adm upgrade` shows
 * why a minor-version update waits. release-upgrades removes the mark once the move is done; a run
 * that stops short leaves it, since a half-moved cluster should not be upgraded either.
 *
 * Once the mark is there (a resumed run), a pool roll-out or a version change is the agent's own
 * doing (the pull secret, mirrors and proxy roll the master pool), so only the lifecycle agent's
 * work still refuses.
 */
import { CLUSTER_BUSY_WAIT_SECONDS } from '../base/timeouts.js';
import type { StepContext } from '../engine/step.js';
import type { Step } from './step.js';
import {
  conditionTime,
  HOLD_CONFIG_ANNOTATION,
  HOLD_MARK,
  HOLD_REASON,
  readMark,
  writeMarkConditions,
  type MarkState,
} from '../kube/hold-mark.js';
import { clusterMotions, type Motion } from '../kube/cluster-motion.js';
import { MANAGED_BY, MANAGED_BY_LABEL, managedLabels } from '../kube/openshift.js';
import { pollUntil } from '../ports/clock.js';
import { describeRef, type Kube } from '../ports/kube.js';

export interface HoldView {
  mark: MarkState;
  /** the hash of the site-config this run applies */
  configHash: string;
  motions: Motion[];
  /** seconds the survey waited for motions that finish by themselves */
  waitedSeconds: number;
}

const listed = (motions: readonly Motion[]) => motions.map((m) => m.what).join('; ');

/**
 * In a run, waits up to the bound while only motions that finish by themselves are seen; `plan`
 * (no run) reads once and waits for nothing.
 */
async function settledMotions(ctx: StepContext, kube: Kube): Promise<{ motions: Motion[]; waitedSeconds: number }> {
  const first = await clusterMotions(kube);
  const waits = first.length > 0 && first.every((m) => m.settles);
  if (!waits || ctx.run === undefined) return { motions: first, waitedSeconds: 0 };
  const bound = ctx.options.busyWaitSeconds ?? CLUSTER_BUSY_WAIT_SECONDS;
  const began = ctx.clock.monotonic();
  ctx.log.info(
    { motions: first.map((m) => m.what), boundSeconds: bound },
    `waiting for the cluster to settle: ${listed(first)}`,
  );
  let last = first;
  await pollUntil(
    ctx.clock,
    async () => {
      last = await clusterMotions(kube);
      return last.length === 0 || last.some((m) => !m.settles) ? last : undefined;
    },
    { timeoutMs: bound * 1000, intervalMs: 500, maxIntervalMs: 5000 },
  );
  return { motions: last, waitedSeconds: Math.round((ctx.clock.monotonic() - began) / 1000) };
}

/**
 * What apply writes: the mark created, or the agent's own updated, naming the site-config of this
 * run, and its Upgradeable condition.
 */
export interface HoldUpgradesDecision {
  write: 'create' | 'update';
  configHash: string;
  upgradeable: { status: 'False'; reason: string; message: string };
}

export const holdUpgradesStep: Step<HoldView, HoldUpgradesDecision> = {
  name: 'hold-upgrades',
  group: 'cluster',
  description:
    'refuse while ClusterVersion, a MachineConfigPool, an image-based upgrade or an IPConfig moves the cluster (a bounded wait for what finishes by itself); then ClusterOperator `sno-relocate` Upgradeable=False until release-upgrades',
  inputs: () => ({}),

  async survey(ctx) {
    const kube = await ctx.kube();
    const mark = await readMark(kube);
    const configHash = ctx.configHash;
    if (mark.state === 'released' && mark.configHash === configHash)
      return { mark, configHash, motions: [], waitedSeconds: 0 };
    if (mark.state === 'held') {
      // a resumed run: roll-outs now are the agent's own; the lifecycle agent's work still counts
      const motions = (await clusterMotions(kube)).filter((m) => m.lifecycle);
      return { mark, configHash, motions, waitedSeconds: 0 };
    }
    return { mark, configHash, ...(await settledMotions(ctx, kube)) };
  },

  plan(view, site) {
    const { mark } = view;
    if (mark.state === 'foreign')
      return {
        action: 'conflict',
        reason: `${describeRef(HOLD_MARK)} exists without the label ${MANAGED_BY_LABEL}=${MANAGED_BY}, so it is not the agent's: remove or rename it`,
      };
    if (view.motions.length > 0) {
      const waited = view.waitedSeconds > 0 ? ` (still so after waiting ${view.waitedSeconds} s)` : '';
      return { action: 'conflict', reason: `something else is moving the cluster: ${listed(view.motions)}${waited}` };
    }
    if (mark.state === 'held')
      return { action: 'noop', reason: `${describeRef(HOLD_MARK)} already holds upgrades for this move` };
    // this site-config's move finished and released the hold: a rerun that finds nothing to do holds nothing
    if (mark.state === 'released' && mark.configHash === view.configHash)
      return { action: 'noop', reason: `the move to this site-config finished and released upgrades` };
    const write = mark.state === 'absent' ? 'create' : 'update';
    return {
      action: 'change',
      summary: 'the cluster is at rest: hold upgrades while the agent moves it',
      changes: [
        {
          action: write,
          target: describeRef(HOLD_MARK),
          summary: `Upgradeable=False (${HOLD_REASON}) for site ${site.name}`,
        },
      ],
      decision: {
        write,
        configHash: view.configHash,
        upgradeable: {
          status: 'False',
          reason: HOLD_REASON,
          message: `sno-relocate is moving this cluster to site ${site.name}; an update waits until the move is done`,
        },
      },
    };
  },

  async apply(ctx, decision) {
    const kube = await ctx.kube();
    const metadata = {
      name: HOLD_MARK.name,
      labels: { ...managedLabels },
      annotations: { [HOLD_CONFIG_ANNOTATION]: decision.configHash },
    };
    if (decision.write === 'create') await kube.create({ ...HOLD_MARK, metadata, spec: {} });
    else await kube.mergePatch(HOLD_MARK, { metadata: { annotations: metadata.annotations } });
    await writeMarkConditions(kube, conditionTime(ctx.clock), decision.upgradeable);
    ctx.log.info(
      { mark: describeRef(HOLD_MARK), reason: decision.upgradeable.reason },
      'upgrades held while the cluster moves',
    );
  },
};
