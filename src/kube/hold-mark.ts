/**
 * The agent's mark on the cluster while it moves it: ClusterOperator `sno-relocate`, whose
 * Upgradeable condition the cluster-version operator reads (pkg/cvo/upgradeable.go). hold-upgrades
 * sets it, release-upgrades lifts it.
 */
import type { Clock } from '../ports/clock.js';
import type { Kube, KubeObject, ObjectRef } from '../ports/kube.js';
import { MANAGED_BY, MANAGED_BY_LABEL } from './openshift.js';

export const HOLD_MARK: ObjectRef = { apiVersion: 'config.openshift.io/v1', kind: 'ClusterOperator', name: MANAGED_BY };
export const HOLD_REASON = 'RelocationInProgress';

/** the site-config (its hash) the mark was set for */
export const HOLD_CONFIG_ANNOTATION = 'sno-relocate.openshift.io/config-hash';

/**
 * The mark as the cluster holds it: absent; an object of its name the agent did not make; or the
 * agent's, holding upgrades or released, for the site-config of `configHash`.
 */
export type MarkState =
  { state: 'absent' } | { state: 'foreign' } | { state: 'held' | 'released'; configHash: string | undefined };

interface MarkCondition {
  type: string;
  status: string;
  lastTransitionTime?: string;
}

type MarkObject = KubeObject & { status?: { conditions?: MarkCondition[] } };

export async function readMark(kube: Kube): Promise<MarkState> {
  const mark = await kube.get<MarkObject>(HOLD_MARK);
  if (!mark) return { state: 'absent' };
  if (mark.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) return { state: 'foreign' };
  const upgradeable = mark.status?.conditions?.find((c) => c.type === 'Upgradeable');
  return {
    state: upgradeable?.status === 'True' ? 'released' : 'held',
    configHash: mark.metadata.annotations?.[HOLD_CONFIG_ANNOTATION],
  };
}

/**
 * The mark's conditions: Available and settled (health and the watcher see nothing wrong),
 * Upgradeable as given. A condition keeps its `lastTransitionTime` from `previous` unless its
 * status changes, as library-go's SetOperatorCondition keeps it (pkg/operator/v1helpers/helpers.go).
 */
export function markConditions(
  now: string,
  upgradeable: { status: 'True' | 'False'; reason: string; message: string },
  previous: readonly MarkCondition[] = [],
) {
  const wanted = [
    { type: 'Available', status: 'True', reason: 'AsExpected' },
    { type: 'Progressing', status: 'False', reason: 'AsExpected' },
    { type: 'Degraded', status: 'False', reason: 'AsExpected' },
    { type: 'Upgradeable', ...upgradeable },
  ];
  return wanted.map((condition) => {
    const before = previous.find((p) => p.type === condition.type);
    const kept = before?.status === condition.status ? before.lastTransitionTime : undefined;
    return { ...condition, lastTransitionTime: kept ?? now };
  });
}

/** sets the mark's conditions (`markConditions`) on the mark as the cluster holds it */
export async function writeMarkConditions(
  kube: Kube,
  now: string,
  upgradeable: Parameters<typeof markConditions>[1],
): Promise<void> {
  await kube.updateStatus<MarkObject>(HOLD_MARK, (co) => ({
    ...co,
    status: { conditions: markConditions(now, upgradeable, co.status?.conditions) },
  }));
}

/** now, to the second, as condition times are written */
export const conditionTime = (clock: Clock): string =>
  clock
    .now()
    .toISOString()
    .replace(/\.\d+Z$/, 'Z');
