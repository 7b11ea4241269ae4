/**
 * Cluster API object health: Clusters and Machines by their v1beta2 conditions, else the v1beta1
 * phase, Ready condition and failure fields; MachineSets and MachineDeployments by ready replicas.
 */
import {
  conditionOf,
  conditionsOf,
  describeCondition,
  nameOf,
  str,
  type Condition,
  type RawFinding,
  type WatchedObject,
} from '../model.js';
import { capiFinding as finding, MACHINE_GRACE_MS, paused, since } from './capi-finding.js';

/**
 * The failure fields v1beta2 keeps only under status.deprecated.v1beta1 (the projection puts them
 * back where v1beta1 has them, see capiStatus in resources.ts).
 */
function failureOf(obj: WatchedObject): string | undefined {
  const reason = str(obj.status?.failureReason);
  const message = str(obj.status?.failureMessage);
  return reason || message
    ? `failed: ${[reason, message].filter(Boolean).join(': ')} (deprecated v1beta1 failureReason/failureMessage)`
    : undefined;
}

function failure(object: string, obj: WatchedObject): RawFinding[] {
  const failed = failureOf(obj);
  return failed ? [finding(object, { severity: 'error', reason: failed })] : [];
}

/** The v1beta2 conditions (metav1.Condition), from status.v1beta2 of the v1beta1 shape. */
const v1beta2Conditions = (obj: WatchedObject): Condition[] =>
  conditionsOf({ metadata: obj.metadata, status: obj.status?.v1beta2 as Record<string, unknown> | undefined });

const describe = (c: Condition): string =>
  `${c.type} ${c.status}${describeCondition(c) ? `: ${describeCondition(c)}` : ''}`;

/**
 * One finding for an object judged by its v1beta2 conditions: the first of `types` that is not
 * True (NodeHealthy only when False: Unknown while a Machine waits for its Node is what Ready says
 * better), with the deprecated failure fields when set.
 */
function byV1beta2(
  object: string,
  obj: WatchedObject,
  conditions: Condition[],
  types: readonly string[],
  provisioning: boolean,
): RawFinding[] {
  const of = (type: string) => conditions.find((c) => c.type === type);
  const bad = types
    .map(of)
    .find((c) => c !== undefined && (c.type === 'NodeHealthy' ? c.status === 'False' : c.status !== 'True'));
  const failed = failureOf(obj);
  if (failed || str(obj.status?.phase) === 'Failed')
    return [
      finding(object, {
        severity: 'error',
        reason: [failed ?? 'phase Failed', bad && describe(bad)].filter(Boolean).join('; '),
        ...since(bad),
      }),
    ];
  if (!bad) return [];
  return [
    finding(object, {
      severity: provisioning ? 'info' : 'warning',
      reason: describe(bad),
      ...since(bad),
      escalate: { afterMs: MACHINE_GRACE_MS, to: provisioning ? 'warning' : 'error' },
    }),
  ];
}

/** Cluster API v1beta2 Cluster condition (kubernetes-sigs/cluster-api api/core/v1beta2/cluster_types.go). */
const CLUSTER_V1BETA2 = ['Available'] as const;
/** Machine conditions, cause first (api/core/v1beta2/machine_types.go: NodeHealthy, Ready, Available). */
const MACHINE_V1BETA2 = ['NodeHealthy', 'Ready', 'Available'] as const;

export function checkCluster(cluster: WatchedObject, kind = 'Cluster'): RawFinding[] {
  const object = nameOf(kind, cluster);
  if (paused(cluster)) return [finding(object, { severity: 'info', reason: 'paused: not reconciled' })];
  const phase = str(cluster.status?.phase);
  const v1beta2 = v1beta2Conditions(cluster);
  if (v1beta2.length > 0) return byV1beta2(object, cluster, v1beta2, CLUSTER_V1BETA2, phase === 'Provisioning');
  const out = failure(object, cluster);
  if (phase === 'Failed' && out.length === 0) out.push(finding(object, { severity: 'error', reason: 'phase Failed' }));
  const ready = conditionOf(cluster, 'Ready');
  if (out.length === 0 && ready && ready.status !== 'True') {
    out.push(
      finding(object, {
        severity: 'warning',
        reason: describe(ready),
        ...since(ready),
        escalate: { afterMs: MACHINE_GRACE_MS, to: 'error' },
      }),
    );
  }
  return out;
}

const MACHINE_FINE = new Set(['Running', 'Provisioned', 'Provisioning', 'Pending']);
const MACHINE_PROVISIONING = new Set(['Provisioning', 'Pending']);

export function checkMachine(machine: WatchedObject, kind = 'Machine'): RawFinding[] {
  const object = nameOf(kind, machine);
  const phase = str(machine.status?.phase);
  if (phase === 'Deleting' || phase === 'Deleted')
    return [finding(object, { severity: 'info', reason: `phase ${phase}` })];
  const v1beta2 = v1beta2Conditions(machine);
  if (v1beta2.length > 0)
    return byV1beta2(object, machine, v1beta2, MACHINE_V1BETA2, MACHINE_PROVISIONING.has(phase ?? ''));
  const out = failure(object, machine);
  if (phase === 'Failed')
    return out.length > 0 ? out : [finding(object, { severity: 'error', reason: 'phase Failed' })];
  if (out.length > 0) return out;
  if (phase && !MACHINE_FINE.has(phase))
    return [
      finding(object, {
        severity: 'warning',
        reason: `phase ${phase}`,
        escalate: { afterMs: MACHINE_GRACE_MS, to: 'error' },
      }),
    ];
  if (phase && MACHINE_PROVISIONING.has(phase))
    return [
      finding(object, {
        severity: 'info',
        reason: `phase ${phase}`,
        escalate: { afterMs: MACHINE_GRACE_MS, to: 'warning' },
      }),
    ];
  return [];
}

export function checkReplicas(kind: 'MachineSet' | 'MachineDeployment', obj: WatchedObject): RawFinding[] {
  const object = nameOf(kind, obj);
  const out = failure(object, obj);
  if (str(obj.status?.phase) === 'Failed' && out.length === 0)
    out.push(finding(object, { severity: 'error', reason: 'phase Failed' }));
  const want = typeof obj.spec?.replicas === 'number' ? obj.spec.replicas : undefined;
  const ready = typeof obj.status?.readyReplicas === 'number' ? obj.status.readyReplicas : 0;
  if (want !== undefined && ready < want) {
    out.push(
      finding(object, {
        severity: 'warning',
        reason: `${ready} of ${want} replicas ready`,
        escalate: { afterMs: MACHINE_GRACE_MS, to: 'error' },
      }),
    );
  }
  return out;
}
