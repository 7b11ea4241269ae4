import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import { EMPTY_CONTEXT } from '../watch/model.js';
import { healthStep, type HealthView } from './health.js';

const now = '2026-11-26T12:00:00.000Z';
const runStartedAt = '2026-11-26T11:50:00.000Z';
const watchContext = { ...EMPTY_CONTEXT, siteRegistries: ['registry.store42.example.com:5000'] };
const CONTEXT_FILE = '/var/lib/sno-relocate/watch-context.json';
/** a view with the step's timing and the watcher's context */
const view = (v: Pick<HealthView, 'findings' | 'blocking'> & Partial<HealthView>): HealthView => ({
  timeoutSeconds: 1800,
  stableSeconds: 120,
  now,
  watchContext,
  contextFile: CONTEXT_FILE,
  ...v,
});
const decision = { watchContext, wait: { timeoutSeconds: 1800, stableSeconds: 120 } };

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
    const plan = healthStep.plan(view({ findings: [...findings], blocking: [...blocking] }), testSite());
    expect(plan.action).toBe(action);
    // the watcher's context is laid down first, then the wait: both listed, both decided
    expect(plan.action === 'change' ? plan.changes.map((c) => c.target) : []).toEqual(
      targets.length > 0 ? [CONTEXT_FILE, ...targets] : [],
    );
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(targets.length > 0 ? decision : undefined);
  });

  it('says how long it waits and how long it must hold', () => {
    expect(healthStep.plan(view({ findings: [], blocking: ['x: y'] }), testSite())).toMatchObject({
      summary: 'wait up to 1800s for 1 thing to settle, then 120s stable',
      decision,
    });
  });

  it.each([
    ['status from before the run', '2026-11-20T08:00:00.000Z', 'change'],
    ['status changed in the run, not yet held through the window', '2026-11-26T11:59:00.000Z', 'change'],
    ['status changed in the run and held through the window', '2026-11-26T11:55:00.000Z', 'noop'],
    ['no transition times at all', undefined, 'change'],
    [
      'status an earlier run saw settled, unchanged since',
      '2026-11-26T10:00:00.000Z',
      'noop',
      '2026-11-26T10:30:00.000Z',
    ],
    ['status changed after an earlier run was done', '2026-11-26T11:00:00.000Z', 'change', '2026-11-26T10:30:00.000Z'],
  ] as const)('in a run, settled %s: %s', (_, changedAt, action, doneAt?: string) => {
    const plan = healthStep.plan(
      view({ findings: [], blocking: [], runStartedAt, ...(doneAt && { doneAt }), ...(changedAt && { changedAt }) }),
      testSite(),
    );
    expect(plan.action).toBe(action);
    if (plan.action === 'change') {
      expect(plan.summary).toBe(
        'watch for 120s that the cluster stays settled: its status has not yet been seen holding since the run started',
      );
      expect(plan.changes.map((c) => c.target)).toEqual([CONTEXT_FILE, 'ClusterOperators']);
      expect(plan.decision).toEqual(decision);
    }
  });
});
