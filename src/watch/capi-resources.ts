/**
 * The Cluster API resources the watcher follows, public and HyperShift's private groups, with what
 * their checks read: the objects' status in one shape whichever version was read, the CRDs' owner
 * marks, the ClusterAPI operator, HostedClusters, the conversion webhooks' endpoints and HyperShift's
 * migration status.
 */
import { meta, object, pick, type RawObject, type WatchedResource } from './projection.js';

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

/** in the order the watcher lists them: the objects, then what their checks read beside them */
export const CAPI_RESOURCES: readonly WatchedResource[] = [
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
];
