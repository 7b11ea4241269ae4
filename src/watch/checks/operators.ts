/** ClusterOperators: Available and not Degraded is healthy; Progressing is news, not trouble. */
import {
  conditionOf,
  describeCondition,
  nameOf,
  type Condition,
  type RawFinding,
  type Snapshot,
  type WatchedObject,
} from '../model.js';

export const PROGRESS_GRACE_MS = 30 * 60_000;

const finding = (object: string, rest: Omit<RawFinding, 'component' | 'object'>): RawFinding => ({
  component: 'operators',
  object,
  ...rest,
});
const detail = (c: Condition) => (describeCondition(c) ? `: ${describeCondition(c)}` : '');

export function checkClusterOperator(co: WatchedObject): RawFinding[] {
  const object = nameOf('ClusterOperator', co);
  const available = conditionOf(co, 'Available');
  const degraded = conditionOf(co, 'Degraded');
  const progressing = conditionOf(co, 'Progressing');
  const out: RawFinding[] = [];
  if (!available)
    out.push(
      finding(object, {
        severity: 'warning',
        reason: 'no Available condition reported yet',
        escalate: { afterMs: PROGRESS_GRACE_MS, to: 'error' },
      }),
    );
  else if (available.status !== 'True')
    out.push(
      finding(object, {
        severity: 'error',
        reason: `not Available${detail(available)}`,
        ...(available.lastTransitionTime && { since: available.lastTransitionTime }),
      }),
    );
  if (degraded?.status === 'True')
    out.push(
      finding(object, {
        severity: 'error',
        reason: `Degraded${detail(degraded)}`,
        ...(degraded.lastTransitionTime && { since: degraded.lastTransitionTime }),
      }),
    );
  if (progressing?.status === 'True' && out.length === 0) {
    out.push(
      finding(object, {
        severity: 'info',
        reason: `Progressing${detail(progressing)}`,
        ...(progressing.lastTransitionTime && { since: progressing.lastTransitionTime }),
        escalate: { afterMs: PROGRESS_GRACE_MS, to: 'warning' },
      }),
    );
  }
  return out;
}

export const checkOperators = (snapshot: Snapshot): RawFinding[] =>
  snapshot.list('clusteroperators').flatMap(checkClusterOperator);
