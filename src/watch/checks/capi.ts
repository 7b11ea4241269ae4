/**
 * Cluster API: Cluster and Machine health (v1beta2 conditions, else the v1beta1 fields), replica
 * sets, the Cluster API CRDs of both groups (kubernetes-sigs' cluster.x-k8s.io and HyperShift's
 * private cluster.hypershift.openshift.io copies): who owns them, stored versions they no longer
 * serve, conversion webhooks with nothing behind them; and HyperShift's migrations to the private
 * types and to the v1beta2 storage version, as its controllers report them.
 */
import {
  conditionOf,
  conditionsOf,
  describeCondition,
  nameOf,
  str,
  type Condition,
  type RawFinding,
  type Snapshot,
  type WatchedObject,
} from '../model.js';
import { crdVersions, isCapiGroup, isPrivateCapiGroup, PRIVATE_CAPI_GROUP_SUFFIX } from '../resources.js';

const MINUTES = 60_000;
export const MACHINE_GRACE_MS = 20 * MINUTES;
/**
 * A private-types migration that holds its lock longer is stuck: the enhancement bounds its waits
 * at 5 (pods gone), 10 (deployments available) and 5 minutes (health check), and estimates 5-15
 * minutes per hosted cluster (openshift/enhancements enhancements/hypershift/private-capi-types.md,
 * "Migration Process"); the same bound serves HyperShift's CRD storage migration.
 */
export const MIGRATION_GRACE_MS = 30 * MINUTES;

const finding = (object: string, rest: Omit<RawFinding, 'component' | 'object'>): RawFinding => ({
  component: 'capi',
  object,
  ...rest,
});

const since = (c: { lastTransitionTime?: string } | undefined) =>
  c?.lastTransitionTime ? { since: c.lastTransitionTime } : {};

const paused = (obj: WatchedObject): boolean =>
  obj.spec?.paused === true || obj.metadata.annotations?.['cluster.x-k8s.io/paused'] !== undefined;

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

export type CapiOwner = 'HyperShift' | 'OpenShift (cluster-capi-operator)' | 'clusterctl';

const MANAGER_OWNERS: [RegExp, CapiOwner][] = [
  [/^hypershift/, 'HyperShift'],
  [/^(cluster-capi-operator|cluster-version-operator|capi-operator)/, 'OpenShift (cluster-capi-operator)'],
  [/^clusterctl/, 'clusterctl'],
];

/**
 * The namespaces of conversion webhook Services: HyperShift's operator (openshift/hypershift
 * cmd/install/install.go, `hypershift/operator`) and its private types' shim
 * (`hypershift-operator/capi-conversion-webhook-shim`, private-capi-types.md "Conversion Webhook
 * Shim"), the platform's openshift-cluster-api, clusterctl's capi-system.
 */
const SERVICE_OWNERS: [RegExp, CapiOwner][] = [
  [/^(hypershift|hypershift-operator)$/, 'HyperShift'],
  [/^openshift-cluster-api/, 'OpenShift (cluster-capi-operator)'],
  [/^capi-system$/, 'clusterctl'],
];

interface Conversion {
  strategy?: string;
  webhook?: { clientConfig?: { service?: { namespace?: string; name?: string } } };
}

const conversionOf = (crd: WatchedObject): Conversion | undefined => crd.spec?.conversion as Conversion | undefined;

/** Every owner the CRD carries a mark of, with the marks. */
export function ownersOf(crd: WatchedObject): Map<CapiOwner, string[]> {
  const owners = new Map<CapiOwner, string[]>();
  const mark = (owner: CapiOwner, why: string) => owners.set(owner, [...(owners.get(owner) ?? []), why]);
  // the private group is HyperShift's by definition: "owned and lifecycled by the HyperShift operator"
  const group = str(crd.spec?.group) ?? '';
  if (isPrivateCapiGroup(group)) mark('HyperShift', `group ${group}`);
  for (const manager of crd.metadata.managers ?? []) {
    const owner = MANAGER_OWNERS.find(([re]) => re.test(manager))?.[1];
    if (owner) mark(owner, `field manager ${manager}`);
  }
  const service = conversionOf(crd)?.webhook?.clientConfig?.service;
  if (service?.namespace) {
    const owner = SERVICE_OWNERS.find(([re]) => re.test(service.namespace!))?.[1];
    if (owner) mark(owner, `conversion webhook ${service.namespace}/${service.name ?? ''}`);
  }
  const annotations = crd.metadata.annotations ?? {};
  const openshiftRelease = Object.keys(annotations).some((k) => k.startsWith('include.release.openshift.io/'));
  if (openshiftRelease) mark('OpenShift (cluster-capi-operator)', 'release manifest annotations');
  if (crd.metadata.labels?.['cluster.x-k8s.io/provider'] === 'cluster-api' && !openshiftRelease)
    mark('clusterctl', 'label cluster.x-k8s.io/provider=cluster-api');
  return owners;
}

const isCapiCrd = (crd: WatchedObject): boolean => isCapiGroup(str(crd.spec?.group) ?? '');

/**
 * Owners, judged as the private-types enhancement describes: each group has one owner, the
 * platform's (or clusterctl's) cluster.x-k8s.io beside HyperShift's private copies is fine.
 */
function checkOwners(object: string, crd: WatchedObject, unmanaged: readonly string[] | undefined): RawFinding[] {
  const owners = ownersOf(crd);
  const describeOwners = [...owners].map(([owner, marks]) => `${owner} (${marks.join(', ')})`).join(' and ');
  const privateGroup = isPrivateCapiGroup(str(crd.spec?.group) ?? '');
  if (owners.size >= 2) {
    return [
      finding(object, {
        severity: 'error',
        reason: `has two owners: ${describeOwners}`,
        hint: privateGroup
          ? `${PRIVATE_CAPI_GROUP_SUFFIX} is HyperShift's alone: the platform and clusterctl install cluster.x-k8s.io; remove the other installer's copy`
          : 'one Cluster API installation per group: HyperShift keeps its own in cluster.hypershift.openshift.io (hypershift install --private-capi-types) and does not run on single-node OpenShift; remove the second installer, or list the CRD in ClusterAPI cluster spec.unmanagedCustomResourceDefinitions',
      }),
    ];
  }
  if (owners.has('HyperShift') && !privateGroup) {
    const listed = unmanaged?.includes(crd.metadata.name) ?? false;
    return [
      finding(object, {
        severity: 'warning',
        reason: `owned by HyperShift (${owners.get('HyperShift')!.join(', ')})${unmanaged && !listed ? ' but not listed as unmanaged in ClusterAPI cluster' : ''}`,
        hint: 'a HyperShift management cluster is outside the single-node use case',
      }),
    ];
  }
  return [];
}

/**
 * The annotation a CRD migrator sets once it has re-stored every object (openshift/hypershift
 * support/capi-crdmigrator/crd_migrator.go).
 */
export const CRD_MIGRATION_ANNOTATION = 'crd-migration.cluster.x-k8s.io/observed-generation';

/**
 * status.storedVersions against the versions served: objects stored in a version no longer served
 * cannot be read (the upgrade break of a storage migration that did not run); two versions both
 * served mean the migration has not finished.
 */
function checkStoredVersions(object: string, crd: WatchedObject): RawFinding[] {
  const stored = (crd.status?.storedVersions as string[] | undefined) ?? [];
  const versions = crdVersions(crd);
  const storage = versions.find((v) => v.storage)?.name ?? '';
  const served = versions.filter((v) => v.served).map((v) => v.name);
  const dropped = stored.filter((v) => !served.includes(v));
  if (dropped.length > 0) {
    return [
      finding(object, {
        severity: 'error',
        reason: `stored versions ${dropped.join(', ')} no longer served (status.storedVersions ${stored.join(', ')}; served ${served.join(', ') || 'none'})`,
        hint: `run the storage migration (rewrite every ${crd.metadata.name} object so it is stored as ${storage}, e.g. an empty patch of each; HyperShift's CRD migrator or Cluster API's does it), then trim status.storedVersions to [${storage}]: kubectl patch crd ${crd.metadata.name} --subresource=status --type=merge -p '{"status":{"storedVersions":["${storage}"]}}'`,
      }),
    ];
  }
  if (stored.length > 1) {
    const observed = crd.metadata.annotations?.[CRD_MIGRATION_ANNOTATION];
    return [
      finding(object, {
        severity: 'info',
        reason: `storage migration to ${storage} not finished: objects stored as ${stored.join(', ')}${observed ? ` (migrated at generation ${observed}, now ${crd.metadata.generation ?? '?'})` : ''}`,
      }),
    ];
  }
  return [];
}

/** A conversion webhook whose Service has no ready address fails every read and write that converts. */
function checkConversionWebhook(object: string, crd: WatchedObject, snapshot: Snapshot): RawFinding[] {
  const conversion = conversionOf(crd);
  const service = conversion?.webhook?.clientConfig?.service;
  if (conversion?.strategy !== 'Webhook' || !service?.name || !service.namespace) return [];
  const endpoints = snapshot.get('endpoints', service.name, service.namespace);
  const ready = typeof endpoints?.status?.ready === 'number' ? endpoints.status.ready : 0;
  if (ready > 0) return [];
  const notReady = typeof endpoints?.status?.notReady === 'number' ? endpoints.status.notReady : 0;
  const versions = crdVersions(crd)
    .filter((v) => v.served)
    .map((v) => v.name)
    .join(', ');
  return [
    finding(object, {
      severity: 'error',
      reason: `conversion webhook Service ${service.namespace}/${service.name} has no ready endpoints${endpoints ? ` (${notReady} not ready)` : ' (no Endpoints object)'}`,
      hint: `the API server cannot convert between ${versions}: reads and writes in the version not stored fail; check the webhook's pods (kubectl -n ${service.namespace} get pods, and the Service's selector)`,
    }),
  ];
}

export function checkCapiCrd(
  crd: WatchedObject,
  unmanaged: readonly string[] | undefined,
  snapshot: Snapshot,
): RawFinding[] {
  const object = `CRD ${crd.metadata.name}`;
  return [
    ...checkOwners(object, crd, unmanaged),
    ...checkStoredVersions(object, crd),
    ...checkConversionWebhook(object, crd, snapshot),
  ];
}

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
