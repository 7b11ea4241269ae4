import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import type { PlanResult } from '../engine/step.js';
import type { MarkState } from '../kube/hold-mark.js';
import { type HoldUpgradesDecision, type HoldView, holdUpgradesStep } from './hold-upgrades.js';

describe('hold-upgrades decisions, on plain views', () => {
  const HASH = 'sha256:site-b';
  const view = (mark: MarkState, parts: Partial<HoldView> = {}): HoldView => ({
    mark,
    configHash: HASH,
    motions: [],
    waitedSeconds: 0,
    ...parts,
  });
  const hold = (write: 'create' | 'update'): HoldUpgradesDecision => ({
    write,
    configHash: HASH,
    upgradeable: {
      status: 'False',
      reason: 'RelocationInProgress',
      message: 'sno-relocate is moving this cluster to site store-test; an update waits until the move is done',
    },
  });
  it.each<[string, HoldView, PlanResult<HoldUpgradesDecision>['action'], HoldUpgradesDecision | undefined]>([
    ['no mark, the cluster at rest', view({ state: 'absent' }), 'change', hold('create')],
    [
      'a mark released for another site-config',
      view({ state: 'released', configHash: 'sha256:a' }),
      'change',
      hold('update'),
    ],
    ['a mark released for this site-config', view({ state: 'released', configHash: HASH }), 'noop', undefined],
    ['the hold already set (a resumed run)', view({ state: 'held', configHash: HASH }), 'noop', undefined],
    ['a mark the agent did not make', view({ state: 'foreign' }), 'conflict', undefined],
    [
      'an update still going after the wait',
      view({ state: 'absent' }, { motions: [{ what: 'ClusterVersion updating', settles: true }], waitedSeconds: 600 }),
      'conflict',
      undefined,
    ],
    [
      'an image-based upgrade on a resumed run',
      view(
        { state: 'held', configHash: HASH },
        { motions: [{ what: 'ImageBasedUpgrade upgrade', settles: false, lifecycle: true }] },
      ),
      'conflict',
      undefined,
    ],
  ])('%s', (_, v, action, decision) => {
    const plan = holdUpgradesStep.plan(v, testSite());
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
    if (decision)
      expect(plan).toMatchObject({ changes: [{ action: decision.write, target: 'ClusterOperator sno-relocate' }] });
  });
});
