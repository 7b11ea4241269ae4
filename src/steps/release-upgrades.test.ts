import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import type { MarkState } from '../kube/hold-mark.js';
import { type ReleaseUpgradesDecision, releaseUpgradesStep } from './release-upgrades.js';

describe('release-upgrades decisions, on plain views', () => {
  const release: ReleaseUpgradesDecision = {
    upgradeable: {
      status: 'True',
      reason: 'RelocationDone',
      message: 'sno-relocate moved this cluster to site store-test',
    },
  };
  it.each<[string, MarkState, 'noop' | 'change', ReleaseUpgradesDecision | undefined]>([
    ['the hold of this move', { state: 'held', configHash: 'sha256:b' }, 'change', release],
    ['already released', { state: 'released', configHash: 'sha256:b' }, 'noop', undefined],
    ['no mark', { state: 'absent' }, 'noop', undefined],
    ['a mark the agent did not make', { state: 'foreign' }, 'noop', undefined],
  ])('%s', (_, mark, action, decision) => {
    const plan = releaseUpgradesStep.plan(mark, testSite());
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
