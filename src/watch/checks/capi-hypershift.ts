/**
 * HyperShift's migrations, as its controllers report them: a HostedCluster's move to the private
 * Cluster API types, and the CRD storage migration to v1beta2.
 */
import {
  describeCondition,
  nameOf,
  str,
  type Condition,
  type RawFinding,
  type Snapshot,
  type WatchedObject,
} from '../model.js';
import { PRIVATE_CAPI_GROUP_SUFFIX } from '../capi-resources.js';
import { capiFinding as finding, MINUTES, paused, since } from './capi-finding.js';

/**
 * A private-types migration that holds its lock longer is stuck: the enhancement bounds its waits
 * at 5 (pods gone), 10 (deployments available) and 5 minutes (health check), and estimates 5-15
 * minutes per hosted cluster (openshift/enhancements enhancements/hypershift/private-capi-types.md,
 * "Migration Process"); the same bound serves HyperShift's CRD storage migration.
 */
export const MIGRATION_GRACE_MS = 30 * MINUTES;

const HS = 'hypershift.openshift.io/';

/** hypershift-operator/controllers/manifests/manifests.go, HostedControlPlaneNamespace */
export const controlPlaneNamespace = (hc: WatchedObject): string =>
  `${hc.metadata.namespace ?? ''}-${hc.metadata.name.replaceAll('.', '-')}`;

/**
 * A HostedCluster's move to the private Cluster API types, read from what the migration controller
 * writes (private-capi-types.md, "Migration Controller"): the annotations on the HostedCluster, the
 * Cluster it pauses, the private copies it creates and, on a rollback, deletes.
 */
export function checkHostedCluster(hc: WatchedObject, snapshot: Snapshot): RawFinding[] {
  const object = nameOf('HostedCluster', hc);
  const a = hc.metadata.annotations ?? {};
  const failed = a[`${HS}migration-failed`];
  const privateTypes = a[`${HS}private-capi-types`] === 'true';
  const legacy = a[`${HS}scope`] === 'legacy';
  const namespace = controlPlaneNamespace(hc);
  const inNamespace = (resource: string) => snapshot.list(resource).filter((o) => o.metadata.namespace === namespace);
  const pausedClusters = inNamespace('clusters').filter(paused);
  const copies = inNamespace('privateclusters');
  if (failed !== undefined) {
    // the rollback deletes the private copies, unpauses the Cluster and keeps scope legacy
    const left = [
      ...copies.map((c) => `${nameOf('Cluster', c)} (${PRIVATE_CAPI_GROUP_SUFFIX}) not deleted`),
      ...pausedClusters.map((c) => `${nameOf('Cluster', c)} still paused`),
      ...(legacy ? [] : ['scope legacy missing: neither operator reconciles it']),
    ];
    return [
      finding(object, {
        severity: 'error',
        reason: `private Cluster API migration failed: ${failed || 'no reason given'}; ${left.length > 0 ? `rollback incomplete: ${left.join(', ')}` : 'rolled back to the legacy operator (scope legacy)'}`,
        hint: 'the migration controller does not retry until the hypershift.openshift.io/migration-failed annotation is removed: fix the cause, then remove it',
      }),
    ];
  }
  if (a[`${HS}migration-in-progress`] === 'true') {
    const steps = [
      ...pausedClusters.map((c) => `${nameOf('Cluster', c)} paused`),
      ...(copies.length > 0 ? [`${copies.length} Cluster copied to ${PRIVATE_CAPI_GROUP_SUFFIX}`] : []),
    ];
    return [
      finding(object, {
        severity: 'info',
        reason: `private Cluster API migration in progress${steps.length > 0 ? `: ${steps.join(', ')}` : ''}`,
        hint: 'neither HyperShift operator reconciles it while hypershift.openshift.io/migration-in-progress is set',
        escalate: { afterMs: MIGRATION_GRACE_MS, to: 'error' },
      }),
    ];
  }
  if (legacy && privateTypes)
    return [
      finding(object, {
        severity: 'error',
        reason: 'both scope legacy and private-capi-types: neither operator owns it for sure',
        hint: `the operators settle it by the group of the Cluster API objects in ${namespace}`,
      }),
    ];
  if (legacy)
    return [finding(object, { severity: 'info', reason: 'awaiting private Cluster API migration (scope legacy)' })];
  return [];
}

interface MigrationStatus {
  totalCRDs?: number;
  migratedCRDs?: number;
  conditions?: Condition[];
}

/**
 * HyperShift's CRD storage migrator (v1beta1 to v1beta2) reports in a ConfigMap: data.status is a
 * CAPIMigrationStatus with conditions MigrationComplete, Progressing and Degraded
 * (openshift/hypershift support/capi-crdmigrator/status.go and types.go).
 */
export function checkMigrationStatus(cm: WatchedObject): RawFinding[] {
  const object = nameOf('ConfigMap', cm);
  let status: MigrationStatus;
  try {
    status = JSON.parse(str(cm.status?.status) ?? '{}') as MigrationStatus;
  } catch {
    return [
      finding(object, { severity: 'warning', reason: 'data.status is not JSON: the migration state is unknown' }),
    ];
  }
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  const of = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  const counted = `${status.migratedCRDs ?? 0} of ${status.totalCRDs ?? 0} CRDs migrated`;
  const degraded = of('Degraded');
  if (degraded)
    return [
      finding(object, {
        severity: 'error',
        reason: `Cluster API storage migration failed: ${describeCondition(degraded)} (${counted})`,
        ...since(degraded),
        hint: 'the CRDs not migrated keep v1beta1 in status.storedVersions; the HyperShift operator log names the object it could not rewrite',
      }),
    ];
  const progressing = of('Progressing');
  if (progressing)
    return [
      finding(object, {
        severity: 'info',
        reason: `Cluster API storage migration in progress (${counted})`,
        ...since(progressing),
        escalate: { afterMs: MIGRATION_GRACE_MS, to: 'warning' },
      }),
    ];
  return [];
}
