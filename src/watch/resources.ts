/**
 * The resources the watcher follows, with the versions it reads (first served one wins) and the
 * projection that keeps only what the checks read: a CSV's spec or a CRD's schema runs to hundreds of
 * kilobytes, and a cluster with many namespaces holds a copy of every CSV in each.
 */
import type { Component, WatchedMeta, WatchedObject } from './model.js';

export interface WatchedResource {
  /** key in the snapshot: the plural, except `crds` */
  key: string;
  component: Component;
  group: string;
  /** in order of preference */
  versions: readonly string[];
  plural: string;
  kind: string;
  /** built into the API server (core, apiregistration, apiextensions): never "not installed" */
  builtIn?: { version: string };
  /** served only where HyperShift runs: its absence is the normal case and not reported */
  optional?: true;
  fieldSelector?: string;
  /** undefined: not kept */
  project(raw: RawObject): WatchedObject | undefined;
}

export interface RawObject {
  metadata?: {
    name?: string;
    namespace?: string;
    generation?: number;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    managedFields?: { manager?: string }[];
    resourceVersion?: string;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [field: string]: unknown;
}

export const PACKAGES_API_SERVICE = 'v1.packages.operators.coreos.com';
export const CAPI_GROUP_SUFFIX = 'cluster.x-k8s.io';
/**
 * HyperShift's private copies of the Cluster API types: `cluster.hypershift.openshift.io` and its
 * `infrastructure.`, `controlplane.`, `bootstrap.` subgroups (openshift/enhancements
 * enhancements/hypershift/private-capi-types.md, "API Extensions" and "API Proxy Translation Details").
 */
export const PRIVATE_CAPI_GROUP_SUFFIX = 'cluster.hypershift.openshift.io';
/** The ConfigMap HyperShift's CRD migrator reports in (openshift/hypershift support/capi-crdmigrator/status.go). */
export const CAPI_MIGRATION_STATUS = 'capi-migration-status';

const inGroup = (group: string, suffix: string): boolean => group === suffix || group.endsWith(`.${suffix}`);
export const isPublicCapiGroup = (group: string): boolean => inGroup(group, CAPI_GROUP_SUFFIX);
export const isPrivateCapiGroup = (group: string): boolean => inGroup(group, PRIVATE_CAPI_GROUP_SUFFIX);
export const isCapiGroup = (group: string): boolean => isPublicCapiGroup(group) || isPrivateCapiGroup(group);

function meta(
  raw: RawObject,
  keep: { labels?: boolean; annotations?: boolean | readonly string[]; managers?: boolean } = {},
): WatchedMeta {
  const m = raw.metadata ?? {};
  const out: WatchedMeta = { name: m.name ?? '' };
  if (m.namespace) out.namespace = m.namespace;
  if (m.generation !== undefined) out.generation = m.generation;
  if (m.creationTimestamp) out.creationTimestamp = m.creationTimestamp;
  if (keep.labels && m.labels) out.labels = m.labels;
  if (keep.annotations && m.annotations) {
    const wanted = keep.annotations;
    out.annotations =
      wanted === true
        ? m.annotations
        : Object.fromEntries(Object.entries(m.annotations).filter(([k]) => wanted.some((p) => k.startsWith(p))));
  }
  if (keep.managers && m.managedFields)
    out.managers = [...new Set(m.managedFields.map((f) => f.manager ?? '').filter(Boolean))].sort();
  return out;
}

const pick = (
  value: Record<string, unknown> | undefined,
  fields: readonly string[],
): Record<string, unknown> | undefined => {
  if (!value) return undefined;
  const out = Object.fromEntries(fields.filter((f) => value[f] !== undefined).map((f) => [f, value[f]]));
  return Object.keys(out).length > 0 ? out : undefined;
};

const object = (
  metadata: WatchedMeta,
  spec?: Record<string, unknown>,
  status?: Record<string, unknown>,
): WatchedObject => ({
  metadata,
  ...(spec && { spec }),
  ...(status && { status }),
});

const CAPI_STATUS = [
  'phase',
  'conditions',
  'v1beta2',
  'failureReason',
  'failureMessage',
  'replicas',
  'readyReplicas',
  'availableReplicas',
  'infrastructureReady',
  'controlPlaneReady',
];

type Status = Record<string, unknown>;
const record = (value: unknown): Status | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Status) : undefined;

/**
 * A Cluster API object's status in the v1beta1 API's shape whichever version was read: v1beta1
 * carries the v1beta2 conditions under `status.v1beta2` (kubernetes-sigs/cluster-api
 * api/core/v1beta1/machine_types.go, `V1Beta2`), v1beta2 carries the v1beta1 conditions and failure
 * fields under `status.deprecated.v1beta1` (api/core/v1beta2/machine_types.go, `Deprecated`).
 */
export function capiStatus(raw: RawObject): Status | undefined {
  const status = record(raw.status);
  if (!status || !String(raw.apiVersion ?? '').endsWith('/v1beta2')) return pick(status, CAPI_STATUS);
  const deprecated = record(record(status.deprecated)?.v1beta1) ?? {};
  return pick(
    {
      ...status,
      conditions: deprecated.conditions,
      failureReason: deprecated.failureReason,
      failureMessage: deprecated.failureMessage,
      v1beta2: status.conditions === undefined ? undefined : { conditions: status.conditions },
    },
    CAPI_STATUS,
  );
}

/**
 * The public group is read as v1beta1 while it is served, the private copies as v1beta2: they arrive
 * with Cluster API 1.11, stored as v1beta2 (private-capi-types.md, "Conversion Webhook Shim"), and a
 * read in the stored version needs no call to the conversion webhook shim.
 */
const capi = (key: string, kind: string, plural: string, group = CAPI_GROUP_SUFFIX): WatchedResource => ({
  key,
  component: 'capi',
  group,
  versions: group === PRIVATE_CAPI_GROUP_SUFFIX ? ['v1beta2', 'v1beta1'] : ['v1beta1', 'v1beta2'],
  plural,
  kind,
  ...(group === PRIVATE_CAPI_GROUP_SUFFIX && { optional: true }),
  project: (raw) =>
    object(
      meta(raw, { annotations: ['cluster.x-k8s.io/paused'] }),
      pick(raw.spec, ['paused', 'replicas', 'clusterName']),
      capiStatus(raw),
    ),
});

/**
 * The annotations a Cluster API CRD is judged by: the release manifests' (the platform owns it) and
 * the CRD migrators' (kubernetes-sigs/cluster-api api/core/v1beta2/common_types.go); not, say,
 * kubectl's last-applied-configuration, a copy of the whole CRD.
 */
const CAPI_CRD_ANNOTATIONS = ['include.release.openshift.io/', 'crd-migration.cluster.x-k8s.io/'];

/** A core (group '') collection Cluster API's checks read: /api/v1/<plural>. */
const core = (
  plural: string,
  kind: string,
  project: WatchedResource['project'],
  fieldSelector?: string,
): WatchedResource => ({
  key: plural,
  component: 'capi',
  group: '',
  versions: ['v1'],
  plural,
  kind,
  builtIn: { version: 'v1' },
  ...(fieldSelector && { fieldSelector }),
  project,
});

export const RESOURCES: readonly WatchedResource[] = [
  {
    key: 'catalogsources',
    component: 'olm',
    group: 'operators.coreos.com',
    versions: ['v1alpha1'],
    plural: 'catalogsources',
    kind: 'CatalogSource',
    project: (raw) =>
      object(
        meta(raw),
        pick(raw.spec, ['sourceType', 'image', 'address']),
        pick(raw.status, ['connectionState', 'reason', 'message', 'conditions']),
      ),
  },
  {
    key: 'subscriptions',
    component: 'olm',
    group: 'operators.coreos.com',
    versions: ['v1alpha1'],
    plural: 'subscriptions',
    kind: 'Subscription',
    project: (raw) =>
      object(
        meta(raw),
        pick(raw.spec, ['name', 'source', 'sourceNamespace', 'channel']),
        pick(raw.status, ['state', 'conditions', 'currentCSV', 'installedCSV']),
      ),
  },
  {
    key: 'installplans',
    component: 'olm',
    group: 'operators.coreos.com',
    versions: ['v1alpha1'],
    plural: 'installplans',
    kind: 'InstallPlan',
    project: (raw) =>
      object(
        meta(raw),
        pick(raw.spec, ['approval', 'approved', 'clusterServiceVersionNames']),
        pick(raw.status, ['phase', 'conditions', 'message']),
      ),
  },
  {
    key: 'clusterserviceversions',
    component: 'olm',
    group: 'operators.coreos.com',
    versions: ['v1alpha1'],
    plural: 'clusterserviceversions',
    kind: 'ClusterServiceVersion',
    // copies OLM puts in every watched namespace say only "Copied": the original carries the state
    project: (raw) =>
      raw.status?.reason === 'Copied'
        ? undefined
        : object(meta(raw), undefined, pick(raw.status, ['phase', 'reason', 'message', 'lastTransitionTime'])),
  },
  {
    key: 'apiservices',
    component: 'olm',
    group: 'apiregistration.k8s.io',
    versions: ['v1'],
    plural: 'apiservices',
    kind: 'APIService',
    builtIn: { version: 'v1' },
    fieldSelector: `metadata.name=${PACKAGES_API_SERVICE}`,
    project: (raw) => object(meta(raw), pick(raw.spec, ['service']), pick(raw.status, ['conditions'])),
  },
  capi('clusters', 'Cluster', 'clusters'),
  capi('machines', 'Machine', 'machines'),
  capi('machinesets', 'MachineSet', 'machinesets'),
  capi('machinedeployments', 'MachineDeployment', 'machinedeployments'),
  capi('privateclusters', 'Cluster', 'clusters', PRIVATE_CAPI_GROUP_SUFFIX),
  capi('privatemachines', 'Machine', 'machines', PRIVATE_CAPI_GROUP_SUFFIX),
  {
    key: 'crds',
    component: 'capi',
    group: 'apiextensions.k8s.io',
    versions: ['v1'],
    plural: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    builtIn: { version: 'v1' },
    // every CRD tells which watched kinds exist; only Cluster API's keep their owner marks
    project: (raw) => {
      const spec = raw.spec as
        | {
            group?: string;
            names?: { plural?: string };
            versions?: { name: string; served?: boolean; storage?: boolean }[];
            conversion?: unknown;
          }
        | undefined;
      const group = spec?.group ?? '';
      const isCapi = isCapiGroup(group);
      return object(
        isCapi ? meta(raw, { labels: true, annotations: CAPI_CRD_ANNOTATIONS, managers: true }) : meta(raw),
        {
          group,
          versions: (spec?.versions ?? []).map((v) => ({
            name: v.name,
            served: v.served === true,
            storage: v.storage === true,
          })),
          ...(isCapi && spec?.conversion !== undefined && { conversion: spec.conversion }),
        },
        pick(raw.status, isCapi ? ['conditions', 'storedVersions'] : ['conditions']),
      );
    },
  },
  {
    key: 'clusterapis',
    component: 'capi',
    group: 'operator.openshift.io',
    versions: ['v1alpha1'],
    plural: 'clusterapis',
    kind: 'ClusterAPI',
    project: (raw) =>
      object(
        meta(raw),
        pick(raw.spec, ['unmanagedCustomResourceDefinitions']),
        pick(raw.status, ['currentRevision', 'desiredRevision', 'observedRevisionGeneration']),
      ),
  },
  {
    key: 'hostedclusters',
    component: 'capi',
    group: 'hypershift.openshift.io',
    versions: ['v1beta1'],
    plural: 'hostedclusters',
    kind: 'HostedCluster',
    project: (raw) => object(meta(raw, { annotations: ['hypershift.openshift.io/'] })),
  },
  // the Services behind Cluster API conversion webhooks: how many addresses are ready
  core('endpoints', 'Endpoints', (raw) => {
    const subsets = (raw.subsets as { addresses?: unknown[]; notReadyAddresses?: unknown[] }[] | undefined) ?? [];
    const count = (field: 'addresses' | 'notReadyAddresses') =>
      subsets.reduce((n, s) => n + (s[field]?.length ?? 0), 0);
    return object(meta(raw), undefined, { ready: count('addresses'), notReady: count('notReadyAddresses') });
  }),
  // data.status: the migrator's JSON (openshift/hypershift support/capi-crdmigrator/types.go, CAPIMigrationStatus)
  core(
    'configmaps',
    'ConfigMap',
    (raw) => object(meta(raw), undefined, pick(raw.data as Status | undefined, ['status'])),
    `metadata.name=${CAPI_MIGRATION_STATUS}`,
  ),
  {
    key: 'machineosconfigs',
    component: 'layering',
    group: 'machineconfiguration.openshift.io',
    versions: ['v1', 'v1alpha1'],
    plural: 'machineosconfigs',
    kind: 'MachineOSConfig',
    project: (raw) =>
      object(
        meta(raw, { annotations: ['machineconfiguration.openshift.io/'] }),
        pick(raw.spec, ['machineConfigPool', 'renderedImagePushSpec', 'buildInputs']),
        pick(raw.status, ['currentImagePullSpec', 'currentImagePullspec', 'machineOSBuild', 'conditions']),
      ),
  },
  {
    key: 'machineosbuilds',
    component: 'layering',
    group: 'machineconfiguration.openshift.io',
    versions: ['v1', 'v1alpha1'],
    plural: 'machineosbuilds',
    kind: 'MachineOSBuild',
    project: (raw) =>
      object(
        meta(raw, { labels: true }),
        pick(raw.spec, ['machineOSConfig', 'renderedImagePushSpec', 'renderedImagePushspec']),
        pick(raw.status, ['conditions', 'digestedImagePushSpec', 'finalImagePullspec', 'buildStart', 'buildEnd']),
      ),
  },
  {
    key: 'machineconfigpools',
    component: 'layering',
    group: 'machineconfiguration.openshift.io',
    versions: ['v1'],
    plural: 'machineconfigpools',
    kind: 'MachineConfigPool',
    project: (raw) =>
      object(
        meta(raw),
        undefined,
        pick(raw.status, ['conditions', 'machineCount', 'readyMachineCount', 'degradedMachineCount']),
      ),
  },
  {
    key: 'clusteroperators',
    component: 'operators',
    group: 'config.openshift.io',
    versions: ['v1'],
    plural: 'clusteroperators',
    kind: 'ClusterOperator',
    project: (raw) => object(meta(raw), undefined, pick(raw.status, ['conditions'])),
  },
];

export const RESOURCE_BY_KEY: ReadonlyMap<string, WatchedResource> = new Map(RESOURCES.map((r) => [r.key, r]));

/** The CRD that serves a resource, `plural.group`. */
export const crdNameOf = (r: WatchedResource): string => `${r.plural}.${r.group}`;

export interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
}

/** The version to watch, given a CRD's versions: the first preferred one that is served. */
export function chooseVersion(r: WatchedResource, versions: readonly CrdVersion[]): string | undefined {
  return r.versions.find((v) => versions.some((cv) => cv.name === v && cv.served));
}

/** A CRD as the projection keeps it. */
export const crdVersions = (crd: WatchedObject): CrdVersion[] => (crd.spec?.versions as CrdVersion[] | undefined) ?? [];

export const isEstablished = (crd: WatchedObject): boolean =>
  ((crd.status?.conditions as { type: string; status: string }[] | undefined) ?? []).some(
    (c) => c.type === 'Established' && c.status === 'True',
  );
