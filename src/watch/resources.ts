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
  /** built into the API server (apiregistration, apiextensions): never "not installed" */
  builtIn?: { version: string };
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
  'deprecated',
];

const capi = (key: string, kind: string, plural: string): WatchedResource => ({
  key,
  component: 'capi',
  group: CAPI_GROUP_SUFFIX,
  versions: ['v1beta1', 'v1beta2'],
  plural,
  kind,
  project: (raw) =>
    object(
      meta(raw, { annotations: ['cluster.x-k8s.io/paused'] }),
      pick(raw.spec, ['paused', 'replicas', 'clusterName']),
      pick(raw.status, CAPI_STATUS),
    ),
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
      const isCapi = group === CAPI_GROUP_SUFFIX || group.endsWith(`.${CAPI_GROUP_SUFFIX}`);
      return object(
        isCapi ? meta(raw, { labels: true, annotations: true, managers: true }) : meta(raw),
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

/** The CRD that serves a resource, `plural.group` (for Cluster API the core group). */
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
