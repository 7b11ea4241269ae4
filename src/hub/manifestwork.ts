/**
 * The hub's side of the report: Open Cluster Management objects that read each cluster's
 * SiteRelocation back without touching it. A ManifestWork in the managed cluster's namespace on the
 * hub (or one ManifestWorkReplicaSet for every cluster a Placement selects) names the SiteRelocation
 * with updateStrategy ReadOnly, so the work agent only checks that it exists and never creates,
 * changes or deletes what the agent on the node writes; its statusFeedback JSONPaths copy scalar
 * fields of `.status` into the ManifestWork's `status.resourceStatus.manifests[].statusFeedback`
 * (open-cluster-management-io/api, work/v1/types.go: a path that points at a structure, map or
 * list returns no value, so only scalars are named here).
 */
import { MANAGED_BY_LABEL, MANAGED_BY } from '../kube/openshift.js';
import type { KubeObject } from '../ports/kube.js';
import {
  REPORT_API_VERSION,
  REPORT_GROUP,
  REPORT_KIND,
  REPORT_NAME,
  REPORT_PLURAL,
  type ReportStatus,
} from './report.js';

export const WORK_GROUP = 'work.open-cluster-management.io';
export const MANIFEST_WORK_API_VERSION = `${WORK_GROUP}/v1`;
export const REPLICA_SET_API_VERSION = `${WORK_GROUP}/v1alpha1`;
/** the name of the hub objects, in each cluster's namespace or the placement's */
export const HUB_OBJECT_NAME = 'sno-relocate-report';

/** The scalar status fields a hub reads back, each under its own name. */
type ScalarField = {
  [K in keyof ReportStatus]-?: NonNullable<ReportStatus[K]> extends string | number ? K : never;
}[keyof ReportStatus];

export const FEEDBACK_FIELDS: readonly ScalarField[] = [
  'site',
  'phase',
  'currentStep',
  'message',
  'startedAt',
  'finishedAt',
  'updatedAt',
  'watcherErrorCount',
  'declined',
  'agentVersion',
];

export const feedbackPath = (field: ScalarField): string => `.status.${field}`;

/** The ManifestWork spec both objects carry. */
export function reportWorkSpec(): Record<string, unknown> {
  return {
    workload: {
      manifests: [{ apiVersion: REPORT_API_VERSION, kind: REPORT_KIND, metadata: { name: REPORT_NAME } }],
    },
    manifestConfigs: [
      {
        resourceIdentifier: { group: REPORT_GROUP, resource: REPORT_PLURAL, name: REPORT_NAME },
        updateStrategy: { type: 'ReadOnly' },
        feedbackRules: [
          {
            type: 'JSONPaths',
            jsonPaths: FEEDBACK_FIELDS.map((name) => ({ name, path: feedbackPath(name) })),
          },
        ],
      },
    ],
  };
}

/** One cluster's ManifestWork, in its namespace on the hub (the ManagedCluster's name). */
export function reportManifestWork(cluster: string): KubeObject {
  return {
    apiVersion: MANIFEST_WORK_API_VERSION,
    kind: 'ManifestWork',
    metadata: { name: HUB_OBJECT_NAME, namespace: cluster, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
    spec: reportWorkSpec(),
  };
}

/** One ManifestWorkReplicaSet for every cluster a Placement selects, in the Placement's namespace. */
export function reportManifestWorkReplicaSet(placement: { namespace: string; name: string }): KubeObject {
  return {
    apiVersion: REPLICA_SET_API_VERSION,
    kind: 'ManifestWorkReplicaSet',
    metadata: { name: HUB_OBJECT_NAME, namespace: placement.namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
    spec: {
      placementRefs: [{ name: placement.name }],
      // the report is read-only on the clusters: nothing there to wait for when it goes
      cascadeDeletionPolicy: 'Background',
      manifestWorkTemplate: reportWorkSpec(),
    },
  };
}
