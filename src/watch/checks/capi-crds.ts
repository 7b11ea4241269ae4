/**
 * The Cluster API CRDs of both groups (kubernetes-sigs' cluster.x-k8s.io and HyperShift's private
 * cluster.hypershift.openshift.io copies): who owns them, stored versions they no longer serve,
 * conversion webhooks with nothing behind them.
 */
import { str, type RawFinding, type Snapshot, type WatchedObject } from '../model.js';
import { isCapiGroup, isPrivateCapiGroup, PRIVATE_CAPI_GROUP_SUFFIX } from '../capi-resources.js';
import { crdVersions } from '../resources.js';
import { capiFinding as finding } from './capi-finding.js';

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

export const isCapiCrd = (crd: WatchedObject): boolean => isCapiGroup(str(crd.spec?.group) ?? '');

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
