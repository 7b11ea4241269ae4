/**
 * Findings over time, as pure functions: when each began, which have held long enough to escalate,
 * the overall health, and what changed between two evaluations (the journal reports only that).
 */
import { COMPONENTS, severityRank, type Finding, type Health, type RawFinding } from './model.js';
import { byCodeUnit } from '../base/order.js';

export const findingKey = (f: Pick<Finding, 'component' | 'object' | 'reason'>): string =>
  `${f.component}\u0000${f.object}\u0000${f.reason}`;

export interface Evaluation {
  findings: Finding[];
  /** when each finding was first seen, by findingKey */
  firstSeen: ReadonlyMap<string, string>;
  /** the next time an escalation falls due (epoch ms), if any */
  nextEscalationAt?: number;
}

const order = (a: Finding, b: Finding): number =>
  severityRank(b.severity) - severityRank(a.severity) ||
  COMPONENTS.indexOf(a.component) - COMPONENTS.indexOf(b.component) ||
  byCodeUnit(a.object, b.object) ||
  byCodeUnit(a.reason, b.reason);

/** Dates findings that carry no time of their own from when they were first seen, and escalates the ones that held. */
export function evaluate(raw: readonly RawFinding[], previous: ReadonlyMap<string, string>, now: Date): Evaluation {
  const firstSeen = new Map<string, string>();
  let nextEscalationAt: number | undefined;
  const findings = raw.map(({ escalate, ...f }): Finding => {
    const key = findingKey(f);
    const seen = previous.get(key) ?? now.toISOString();
    firstSeen.set(key, seen);
    const since = f.since ?? seen;
    if (!escalate) return { ...f, since };
    const due = Date.parse(since) + escalate.afterMs;
    if (due <= now.getTime())
      return { ...f, since, severity: severityRank(escalate.to) > severityRank(f.severity) ? escalate.to : f.severity };
    nextEscalationAt = Math.min(nextEscalationAt ?? Infinity, due);
    return { ...f, since };
  });
  findings.sort(order);
  return { findings, firstSeen, ...(nextEscalationAt !== undefined && { nextEscalationAt }) };
}

export function healthOf(findings: readonly Finding[]): Health {
  if (findings.some((f) => f.severity === 'error')) return 'unhealthy';
  if (findings.some((f) => f.severity === 'warning')) return 'degraded';
  return 'healthy';
}

export interface FindingChanges {
  raised: Finding[];
  /** severity changed */
  changed: { finding: Finding; from: Finding['severity'] }[];
  cleared: Finding[];
}

export function diffFindings(before: readonly Finding[], after: readonly Finding[]): FindingChanges {
  const old = new Map(before.map((f) => [findingKey(f), f]));
  const now = new Map(after.map((f) => [findingKey(f), f]));
  const raised: Finding[] = [];
  const changed: FindingChanges['changed'] = [];
  for (const [key, f] of now) {
    const was = old.get(key);
    if (!was) raised.push(f);
    else if (was.severity !== f.severity) changed.push({ finding: f, from: was.severity });
  }
  return { raised, changed, cleared: [...old].filter(([key]) => !now.has(key)).map(([, f]) => f) };
}

export const countBySeverity = (findings: readonly Finding[]): Record<Finding['severity'], number> => ({
  error: findings.filter((f) => f.severity === 'error').length,
  warning: findings.filter((f) => f.severity === 'warning').length,
  info: findings.filter((f) => f.severity === 'info').length,
});

/** One line for the console banner and the journal: the health and the worst finding. */
export function summaryLine(health: Health, findings: readonly Finding[]): string {
  if (health === 'unknown') return 'cluster health unknown: not synced yet';
  const n = countBySeverity(findings);
  if (health === 'healthy') return `cluster healthy${n.info ? ` (${n.info} notes)` : ''}`;
  const worst = findings[0]!;
  const counts = [
    n.error && `${n.error} error${n.error > 1 ? 's' : ''}`,
    n.warning && `${n.warning} warning${n.warning > 1 ? 's' : ''}`,
  ]
    .filter(Boolean)
    .join(', ');
  return `cluster ${health}: ${counts}; ${worst.object}: ${worst.reason}`;
}
