/**
 * Cluster API: every check over one snapshot. Cluster and Machine health and replica sets
 * (capi-machines.ts); the Cluster API CRDs of both groups, their owners, stored versions and
 * conversion webhooks (capi-crds.ts); HyperShift's migrations to the private types and to the
 * v1beta2 storage version (capi-hypershift.ts); and the ClusterAPI operator's revision rollout.
 */
import { str, type RawFinding, type Snapshot, type WatchedObject } from '../model.js';
import { PRIVATE_CAPI_GROUP_SUFFIX } from '../capi-resources.js';
import { isCapiCrd, checkCapiCrd } from './capi-crds.js';
import { capiFinding as finding, MACHINE_GRACE_MS } from './capi-finding.js';
import { checkHostedCluster, checkMigrationStatus } from './capi-hypershift.js';
import { checkCluster, checkMachine, checkReplicas } from './capi-machines.js';

export function checkClusterApiOperator(config: WatchedObject): RawFinding[] {
  const current = str(config.status?.currentRevision);
  const desired = str(config.status?.desiredRevision);
  if (desired && current !== desired) {
    return [
      finding('ClusterAPI cluster', {
        severity: 'info',
        reason: `revision ${desired} not rolled out (current ${current ?? 'none'})`,
        escalate: { afterMs: MACHINE_GRACE_MS, to: 'warning' },
      }),
    ];
  }
  return [];
}

export function checkCapi(snapshot: Snapshot): RawFinding[] {
  const config = snapshot.get('clusterapis', 'cluster');
  const unmanaged = snapshot.installed('clusterapis')
    ? ((config?.spec?.unmanagedCustomResourceDefinitions as string[] | undefined) ?? [])
    : undefined;
  const privateKind = (kind: string) => `${kind}.${PRIVATE_CAPI_GROUP_SUFFIX}`;
  return [
    ...snapshot.list('clusters').flatMap((o) => checkCluster(o)),
    ...snapshot.list('privateclusters').flatMap((o) => checkCluster(o, privateKind('Cluster'))),
    ...snapshot.list('machines').flatMap((o) => checkMachine(o)),
    ...snapshot.list('privatemachines').flatMap((o) => checkMachine(o, privateKind('Machine'))),
    ...snapshot.list('machinesets').flatMap((o) => checkReplicas('MachineSet', o)),
    ...snapshot.list('machinedeployments').flatMap((o) => checkReplicas('MachineDeployment', o)),
    ...snapshot
      .list('crds')
      .filter(isCapiCrd)
      .flatMap((crd) => checkCapiCrd(crd, unmanaged, snapshot)),
    ...(config ? checkClusterApiOperator(config) : []),
    ...snapshot.list('hostedclusters').flatMap((hc) => checkHostedCluster(hc, snapshot)),
    ...snapshot.list('configmaps').flatMap(checkMigrationStatus),
  ];
}
