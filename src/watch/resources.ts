/**
 * The resources the watcher follows, with the versions it reads (first served one wins) and the
 * projection of each (projection.ts); the Cluster API ones are in capi-resources.ts.
 */
import { CAPI_RESOURCES } from './capi-resources.js';
import type { WatchedObject } from './model.js';
import { meta, object, pick, type WatchedResource } from './projection.js';

export const PACKAGES_API_SERVICE = 'v1.packages.operators.coreos.com';

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
  ...CAPI_RESOURCES,
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
