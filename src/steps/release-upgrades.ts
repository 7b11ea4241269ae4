/**
 * [release-upgrades] The hold hold-upgrades set is released once the move is done, as an operator
 * lifts its own: ClusterOperator `sno-relocate` says Upgradeable=True (reason RelocationDone), and
 * the cluster may be updated again. The object stays, naming the site-config the move was for, so
 * a rerun of the same site-config that finds nothing to do holds nothing. A mark of the agent's
 * name it did not make is left alone.
 */
import type { Step } from './step.js';
import { describeRef } from '../ports/kube.js';
import { conditionTime, HOLD_MARK, readMark, writeMarkConditions, type MarkState } from '../kube/hold-mark.js';

export const RELEASE_REASON = 'RelocationDone';

/** What apply writes: the Upgradeable condition of the mark, released. */
export interface ReleaseUpgradesDecision {
  upgradeable: { status: 'True'; reason: string; message: string };
}

export const releaseUpgradesStep: Step<MarkState, ReleaseUpgradesDecision> = {
  name: 'release-upgrades',
  group: 'cluster',
  description:
    'ClusterOperator `sno-relocate` says Upgradeable=True (RelocationDone): the cluster may be updated again',
  inputs: () => ({}),
  survey: async (ctx) => readMark(await ctx.kube()),
  plan(mark, site) {
    if (mark.state === 'released')
      return { action: 'noop', reason: `${describeRef(HOLD_MARK)} already says Upgradeable=True` };
    if (mark.state !== 'held')
      return { action: 'noop', reason: `no hold of the agent's on upgrades (${describeRef(HOLD_MARK)})` };
    return {
      action: 'change',
      summary: 'the move is done: release the hold on upgrades',
      changes: [{ action: 'update', target: describeRef(HOLD_MARK), summary: `Upgradeable=True (${RELEASE_REASON})` }],
      decision: {
        upgradeable: {
          status: 'True',
          reason: RELEASE_REASON,
          message: `sno-relocate moved this cluster to site ${site.name}`,
        },
      },
    };
  },
  async apply(ctx, decision) {
    await writeMarkConditions(await ctx.kube(), conditionTime(ctx.clock), decision.upgradeable);
    ctx.log.info({ mark: describeRef(HOLD_MARK) }, 'upgrades released');
  },
};
