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

type MarkObject = KubeObject & { status?: { conditions?: { type: string; status: string }[] } };

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

/** the mark's conditions: Available and settled (health and the watcher see nothing wrong), Upgradeable as given */
export function markConditions(
  now: string,
  upgradeable: { status: 'True' | 'False'; reason: string; message: string },
) {
  return [
    { type: 'Available', status: 'True', reason: 'AsExpected', lastTransitionTime: now },
    { type: 'Progressing', status: 'False', reason: 'AsExpected', lastTransitionTime: now },
    { type: 'Degraded', status: 'False', reason: 'AsExpected', lastTransitionTime: now },
    { type: 'Upgradeable', ...upgradeable, lastTransitionTime: now },
  ];
}

/** now, to the second, as condition times are written */
export const conditionTime = (clock: Clock): string =>
  clock
    .now()
    .toISOString()
    .replace(/\.\d+Z$/, 'Z');
