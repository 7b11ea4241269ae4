import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import { healthStep } from './health.js';

describe('health decisions', () => {
  const warning = { severity: 'warning', component: 'olm', object: 'CatalogSource x', reason: 'slow' } as const;
  it.each([
    ['settled, a warning', [warning], [], 'noop', []],
    [
      'an operator degraded and a revision installing',
      [],
      ['ClusterOperator ingress: Degraded: NoRouter', 'kube-apiserver installing revision 7'],
      'change',
      ['ClusterOperator ingress', 'kube-apiserver installing revision 7'],
    ],
  ] as const)('%s', (_, findings, blocking, action, targets) => {
    const plan = healthStep.plan(
      { findings: [...findings] as never, blocking: [...blocking], timeoutSeconds: 1800, stableSeconds: 120 },
      testSite(),
    );
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.target) : []).toEqual(targets);
  });

  it('says how long it waits and how long it must hold', () => {
    expect(
      healthStep.plan({ findings: [], blocking: ['x: y'], timeoutSeconds: 1800, stableSeconds: 120 }, testSite()),
    ).toMatchObject({ summary: 'wait up to 1800s for 1 thing to settle, then 120s stable' });
  });
});
