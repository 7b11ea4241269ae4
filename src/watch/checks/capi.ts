/**
 * Cluster API: Cluster and Machine health (v1beta1 and v1beta2 shapes), replica sets, and who owns
 * the cluster.x-k8s.io CRDs. On a single node the platform owns them; a second installer (HyperShift,
 * clusterctl) fighting over the same CRDs rewrites conversion webhooks and schemas under the other.
 */
import {
  conditionOf,
  describeCondition,
  nameOf,
  str,
  type RawFinding,
  type Snapshot,
  type WatchedObject,
} from '../model.js';
import { CAPI_GROUP_SUFFIX } from '../resources.js';

const MINUTES = 60_000;
export const MACHINE_GRACE_MS = 20 * MINUTES;
export const MIGRATION_GRACE_MS = 60 * MINUTES;

const finding = (object: string, rest: Omit<RawFinding, 'component' | 'object'>): RawFinding => ({
  component: 'capi',
  object,
  ...rest,
});

const since = (c: { lastTransitionTime?: string } | undefined) =>
  c?.lastTransitionTime ? { since: c.lastTransitionTime } : {};

const paused = (obj: WatchedObject): boolean =>
  obj.spec?.paused === true || obj.metadata.annotations?.['cluster.x-k8s.io/paused'] !== undefined;

function failure(object: string, obj: WatchedObject): RawFinding[] {
  const reason = str(obj.status?.failureReason);
  const message = str(obj.status?.failureMessage);
  return reason || message
    ? [finding(object, { severity: 'error', reason: `failed: ${[reason, message].filter(Boolean).join(': ')}` })]
    : [];
}

export function checkCluster(cluster: WatchedObject): RawFinding[] {
  const object = nameOf('Cluster', cluster);
  if (paused(cluster)) return [finding(object, { severity: 'info', reason: 'paused: not reconciled' })];
  const out = failure(object, cluster);
  const phase = str(cluster.status?.phase);
  if (phase === 'Failed' && out.length === 0) out.push(finding(object, { severity: 'error', reason: 'phase Failed' }));
  // v1beta1 says Ready, v1beta2 Available
  const ready = conditionOf(cluster, 'Ready') ?? conditionOf(cluster, 'Available');
  if (ready && ready.status !== 'True' && phase !== 'Failed') {
    out.push(
      finding(object, {
        severity: 'warning',
        reason: `${ready.type} ${ready.status}${describeCondition(ready) ? `: ${describeCondition(ready)}` : ''}`,
        ...since(ready),
        escalate: { afterMs: MACHINE_GRACE_MS, to: 'error' },
      }),
    );
  }
  return out;
}

const MACHINE_FINE = new Set(['Running', 'Provisioned', 'Provisioning', 'Pending']);

export function checkMachine(machine: WatchedObject): RawFinding[] {
  const object = nameOf('Machine', machine);
  const out = failure(object, machine);
  const phase = str(machine.status?.phase);
  if (phase === 'Failed')
    return out.length > 0 ? out : [finding(object, { severity: 'error', reason: 'phase Failed' })];
  if (phase === 'Deleting' || phase === 'Deleted')
    return [...out, finding(object, { severity: 'info', reason: `phase ${phase}` })];
  if (phase && !MACHINE_FINE.has(phase))
    out.push(
      finding(object, {
        severity: 'warning',
        reason: `phase ${phase}`,
        escalate: { afterMs: MACHINE_GRACE_MS, to: 'error' },
      }),
    );
  if (phase === 'Provisioning' || phase === 'Pending')
    out.push(
      finding(object, {
        severity: 'info',
        reason: `phase ${phase}`,
        escalate: { afterMs: MACHINE_GRACE_MS, to: 'warning' },
      }),
    );
  return out;
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

const SERVICE_OWNERS: [RegExp, CapiOwner][] = [
  [/^(hypershift|hypershift-operator)$/, 'HyperShift'],
  [/^openshift-cluster-api/, 'OpenShift (cluster-capi-operator)'],
  [/^capi-system$/, 'clusterctl'],
];

interface ConversionService {
  namespace?: string;
  name?: string;
}

/** Every owner the CRD carries a mark of, with the marks. */
export function ownersOf(crd: WatchedObject): Map<CapiOwner, string[]> {
  const owners = new Map<CapiOwner, string[]>();
  const mark = (owner: CapiOwner, why: string) => owners.set(owner, [...(owners.get(owner) ?? []), why]);
  for (const manager of crd.metadata.managers ?? []) {
    const owner = MANAGER_OWNERS.find(([re]) => re.test(manager))?.[1];
    if (owner) mark(owner, `field manager ${manager}`);
  }
  const service = (crd.spec?.conversion as { webhook?: { clientConfig?: { service?: ConversionService } } } | undefined)
    ?.webhook?.clientConfig?.service;
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

const isCapiCrd = (crd: WatchedObject): boolean => {
  const group = str(crd.spec?.group) ?? '';
  return group === CAPI_GROUP_SUFFIX || group.endsWith(`.${CAPI_GROUP_SUFFIX}`);
};

export function checkCapiCrd(crd: WatchedObject, unmanaged: readonly string[] | undefined): RawFinding[] {
  const object = `CRD ${crd.metadata.name}`;
  const owners = ownersOf(crd);
  const describe = [...owners].map(([owner, marks]) => `${owner} (${marks.join(', ')})`).join(' and ');
  if (owners.size >= 2) {
    return [
      finding(object, {
        severity: 'error',
        reason: `has two owners: ${describe}`,
        hint: 'one Cluster API installation per cluster: HyperShift does not run on single-node OpenShift; remove the second installer, or list the CRD in ClusterAPI cluster spec.unmanagedCustomResourceDefinitions',
      }),
    ];
  }
  if (owners.has('HyperShift')) {
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

const HS = 'hypershift.openshift.io/';

export function checkHostedCluster(hc: WatchedObject): RawFinding[] {
  const object = nameOf('HostedCluster', hc);
  const a = hc.metadata.annotations ?? {};
  const failed = a[`${HS}migration-failed`];
  const privateTypes = a[`${HS}private-capi-types`] === 'true';
  const legacy = a[`${HS}scope`] === 'legacy';
  if (failed !== undefined) {
    return [
      finding(object, {
        severity: 'error',
        reason: `private Cluster API migration failed: ${failed || 'no reason given'}`,
        hint: 'rolled back to the legacy operator; fix the cause before a retry',
      }),
    ];
  }
  if (a[`${HS}migration-in-progress`] === 'true') {
    return [
      finding(object, {
        severity: 'info',
        reason: 'private Cluster API migration in progress',
        escalate: { afterMs: MIGRATION_GRACE_MS, to: 'warning' },
      }),
    ];
  }
  if (legacy && privateTypes)
    return [
      finding(object, {
        severity: 'error',
        reason: 'both scope legacy and private-capi-types: neither operator owns it for sure',
      }),
    ];
  if (legacy)
    return [finding(object, { severity: 'info', reason: 'awaiting private Cluster API migration (scope legacy)' })];
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
  return [
    ...snapshot.list('clusters').flatMap(checkCluster),
    ...snapshot.list('machines').flatMap(checkMachine),
    ...snapshot.list('machinesets').flatMap((o) => checkReplicas('MachineSet', o)),
    ...snapshot.list('machinedeployments').flatMap((o) => checkReplicas('MachineDeployment', o)),
    ...snapshot
      .list('crds')
      .filter(isCapiCrd)
      .flatMap((crd) => checkCapiCrd(crd, unmanaged)),
    ...(config ? checkClusterApiOperator(config) : []),
    ...snapshot.list('hostedclusters').flatMap(checkHostedCluster),
  ];
}
