import { describe, expect, it } from 'vitest';
import type { RawFinding } from './model.js';
import { diffFindings, evaluate, healthOf, summaryLine } from './track.js';

const T0 = new Date('2026-03-01T10:00:00Z');
const later = (ms: number) => new Date(T0.getTime() + ms);
const catalog: RawFinding = {
  component: 'olm',
  object: 'CatalogSource m/r',
  severity: 'warning',
  reason: 'TRANSIENT_FAILURE',
  escalate: { afterMs: 300_000, to: 'error' },
};
const operator: RawFinding = {
  component: 'operators',
  object: 'ClusterOperator dns',
  severity: 'error',
  reason: 'Degraded',
  since: '2026-03-01T09:00:00Z',
};

describe('evaluate', () => {
  it('dates a finding from when it was first seen, and keeps that date', () => {
    const first = evaluate([catalog], new Map(), T0);
    expect(first.findings[0]!.since).toBe(T0.toISOString());
    const second = evaluate([catalog], first.firstSeen, later(60_000));
    expect(second.findings[0]!.since).toBe(T0.toISOString());
  });

  it('escalates a condition that held long enough, and says when the next one is due', () => {
    const first = evaluate([catalog], new Map(), T0);
    expect(first.findings[0]!.severity).toBe('warning');
    expect(first.nextEscalationAt).toBe(T0.getTime() + 300_000);
    const held = evaluate([catalog], first.firstSeen, later(300_000));
    expect(held.findings[0]!.severity).toBe('error');
    expect(held.nextEscalationAt).toBeUndefined();
  });

  it('orders findings of one severity and component by code unit, whatever the host locale', () => {
    const lower = { ...operator, object: 'ClusterOperator b-operator' };
    const upper = { ...operator, object: 'ClusterOperator C-operator' };
    const objects = evaluate([lower, upper], new Map(), T0).findings.map((f) => f.object);
    expect(objects).toEqual(['ClusterOperator C-operator', 'ClusterOperator b-operator']);
  });

  it('starts over when a condition clears and comes back', () => {
    const first = evaluate([catalog], new Map(), T0);
    const cleared = evaluate([], first.firstSeen, later(200_000));
    const back = evaluate([catalog], cleared.firstSeen, later(400_000));
    expect(back.findings[0]).toMatchObject({ severity: 'warning', since: later(400_000).toISOString() });
  });

  it('prefers the object own transition time, and orders errors first', () => {
    const { findings } = evaluate([catalog, operator], new Map(), T0);
    expect(findings.map((f) => [f.object, f.since])).toEqual([
      ['ClusterOperator dns', '2026-03-01T09:00:00Z'],
      ['CatalogSource m/r', T0.toISOString()],
    ]);
    expect(findings[0]).not.toHaveProperty('escalate');
  });
});

describe('health and changes', () => {
  it.each([
    ['nothing', [], 'healthy'],
    ['a note', [{ ...catalog, severity: 'info' as const }], 'healthy'],
    ['a warning', [catalog], 'degraded'],
    ['an error', [catalog, operator], 'unhealthy'],
  ])('%s: %s', (_name, raw, health) => {
    expect(healthOf(evaluate(raw, new Map(), T0).findings)).toBe(health);
  });

  it('reports what was raised, what changed severity and what cleared', () => {
    const first = evaluate([catalog], new Map(), T0);
    const a = first.findings;
    const b = evaluate([catalog, operator], first.firstSeen, later(300_000)).findings;
    const changes = diffFindings(a, b);
    expect(changes.raised.map((f) => f.object)).toEqual(['ClusterOperator dns']);
    expect(changes.changed.map((c) => [c.finding.object, c.from, c.finding.severity])).toEqual([
      ['CatalogSource m/r', 'warning', 'error'],
    ]);
    expect(diffFindings(b, []).cleared).toHaveLength(2);
  });

  it('sums up in one line for the console', () => {
    const { findings } = evaluate([catalog, operator], new Map(), T0);
    expect(summaryLine('unhealthy', findings)).toBe(
      'cluster unhealthy: 1 error, 1 warning; ClusterOperator dns: Degraded',
    );
    expect(summaryLine('healthy', [])).toBe('cluster healthy');
  });
});
