/**
 * Cluster API as a cluster may carry it, seeded on the real test API for the watcher: the upstream
 * CRDs of both groups (test/watch/fixtures/capi-crds: kubernetes-sigs/cluster-api's v1beta1 and
 * v1beta2 Cluster, Machine and MachineDeployment, HyperShift's copy of MachineSet, and HyperShift's
 * private copies in cluster.hypershift.openshift.io), owned as their installers own them, with
 * healthy and broken objects of each kind and HyperShift's migrations as its controllers report them.
 */
import path from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { applyCrds } from '../kube/install.js';
import { REPO } from '../node/context.js';
import { condition, Scenario, type Gvr } from './scenario.js';

export const CAPI_CRDS = path.join(REPO, 'test/watch/fixtures/capi-crds');
const PUBLIC = 'cluster.x-k8s.io';
const PRIVATE = 'cluster.hypershift.openshift.io';
const gvr = (group: string, version: string, plural: string, kind: string): Gvr => ({ group, version, plural, kind });
const CLUSTER = gvr(PUBLIC, 'v1beta1', 'clusters', 'Cluster');
const MACHINE = gvr(PUBLIC, 'v1beta1', 'machines', 'Machine');
const MACHINE_DEPLOYMENT = gvr(PUBLIC, 'v1beta1', 'machinedeployments', 'MachineDeployment');
const PRIVATE_CLUSTER = gvr(PRIVATE, 'v1beta2', 'clusters', 'Cluster');
const PRIVATE_MACHINE = gvr(PRIVATE, 'v1beta2', 'machines', 'Machine');
const HOSTED_CLUSTER = gvr('hypershift.openshift.io', 'v1beta1', 'hostedclusters', 'HostedCluster');
const HS = 'hypershift.openshift.io/';

/** HyperShift's CAPI conversion webhook (openshift/hypershift cmd/install/install.go: the operator Service) */
export const HYPERSHIFT_WEBHOOK = { namespace: 'hypershift', name: 'operator' };
/**
 * the private types' shim (openshift/enhancements enhancements/hypershift/private-capi-types.md, "CRD Configuration")
 */
export const SHIM = { namespace: 'hypershift-operator', name: 'capi-conversion-webhook-shim' };

/** What the watcher reports on the seeded objects, as `severity object: reason`. */
export const CAPI_FINDINGS = [
  `error CRD machines.${PUBLIC}: has two owners: OpenShift (cluster-capi-operator) (field manager cluster-capi-operator, release manifest annotations) and HyperShift (field manager hypershift)`,
  `warning CRD machinesets.${PUBLIC}: owned by HyperShift (field manager hypershift, conversion webhook hypershift/operator) but not listed as unmanaged in ClusterAPI cluster`,
  `error CRD machinesets.${PUBLIC}: conversion webhook Service hypershift/operator has no ready endpoints (1 not ready)`,
  `error CRD machines.${PRIVATE}: stored versions v1beta1 no longer served (status.storedVersions v1beta1, v1beta2; served v1beta2)`,
  'warning MachineDeployment openshift-cluster-api/workers-short: 1 of 2 replicas ready',
  'warning Cluster openshift-cluster-api/legacy: Ready False: WaitingForControlPlane: control plane not yet initialized',
  'warning Machine openshift-cluster-api/sno-node-unhealthy: NodeHealthy False: NodeConditionsFailed: Node sno-0: kubelet stopped posting node status',
  'error Machine openshift-cluster-api/sno-failed: failed: CreateError: machine sno-failed: no capacity on host bm-2 (deprecated v1beta1 failureReason/failureMessage)',
  `error Machine.${PRIVATE} clusters-guest/guest-worker-0: failed: UpdateError: instance i-0abc1234 terminated (deprecated v1beta1 failureReason/failureMessage); NodeHealthy False: NodeDeleted: Node guest-worker-0 is gone`,
  'info Cluster clusters-guest/guest: paused: not reconciled',
  `info HostedCluster clusters/guest: private Cluster API migration in progress: Cluster clusters-guest/guest paused, 1 Cluster copied to ${PRIVATE}`,
  'error HostedCluster clusters/rolled-back: private Cluster API migration failed: health-check-timeout; rolled back to the legacy operator (scope legacy)',
  `error HostedCluster clusters/half: private Cluster API migration failed: resource-conversion-failed; rollback incomplete: Cluster clusters-half/half (${PRIVATE}) not deleted`,
  'error ConfigMap hypershift/capi-migration-status: Cluster API storage migration failed: MigrationError: failed to migrate machinedeployments.cluster.x-k8s.io: Internal error occurred: conversion webhook for cluster.x-k8s.io/v1beta1, Kind=MachineDeployment failed (5 of 12 CRDs migrated)',
];

/** Objects the watcher has nothing to say about: healthy, or fine as they are. */
export const CAPI_QUIET = [
  `CRD clusters.${PUBLIC}`,
  `CRD clusters.${PRIVATE}`,
  'Cluster openshift-cluster-api/sno',
  'Machine openshift-cluster-api/sno-master-0',
  `Cluster.${PRIVATE} clusters-guest/guest`,
  `Machine.${PRIVATE} clusters-guest/guest-worker-1`,
  'Cluster clusters-rolled-back/rolled-back',
  'MachineDeployment openshift-cluster-api/workers',
  'HostedCluster clusters/migrated',
];

const v1beta2True = (...types: string[]) => ({ conditions: types.map((t) => condition(t, 'True')) });

export async function seedCapi(kc: KubeConfig, kubeconfigPath: string): Promise<void> {
  await applyCrds(kubeconfigPath, { dir: CAPI_CRDS });
  await applyCrds(kubeconfigPath, { only: ['clusterapis.operator.openshift.io', 'hypershift'] });
  const s = new Scenario(kc);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const objects = KubernetesObjectApi.makeApiClient(kc);

  // ownership as each installer applies its CRDs (server-side apply, its field manager)
  const apply = (manager: string, name: string, body: { metadata?: object; spec?: object }) =>
    objects.patch(
      {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name, ...body.metadata },
        ...(body.spec && { spec: body.spec }),
      } as KubernetesObject,
      undefined,
      undefined,
      manager,
      true,
      PatchStrategy.ServerSideApply,
    );
  const webhook = (service: { namespace: string; name: string }, reviewVersions: string[]) => ({
    conversion: {
      strategy: 'Webhook',
      webhook: {
        clientConfig: { service: { ...service, port: 443, path: '/convert' } },
        conversionReviewVersions: reviewVersions,
      },
    },
  });
  const release = { annotations: { 'include.release.openshift.io/single-node-developer': 'true' } };
  await apply('cluster-capi-operator', `clusters.${PUBLIC}`, { metadata: release });
  await apply('cluster-capi-operator', `machines.${PUBLIC}`, { metadata: release });
  await apply('hypershift', `machines.${PUBLIC}`, {
    metadata: { labels: { 'hypershift.openshift.io/managed': 'true' } },
  });
  await apply('hypershift', `machinesets.${PUBLIC}`, { spec: webhook(HYPERSHIFT_WEBHOOK, ['v1beta1', 'v1beta2']) });
  for (const plural of ['clusters', 'machines'])
    await apply('hypershift', `${plural}.${PRIVATE}`, { spec: webhook(SHIM, ['v1']) });

  // the webhooks' Services: the shim has a ready address, HyperShift's operator only one not ready
  const service = async (ref: { namespace: string; name: string }, ready: boolean) => {
    await s.namespace(ref.namespace);
    await core.createNamespacedService({
      namespace: ref.namespace,
      body: { metadata: { name: ref.name }, spec: { ports: [{ port: 443, targetPort: 9443 }] } },
    });
    const address = [{ ip: ready ? '10.128.0.20' : '10.128.0.21' }];
    await core.createNamespacedEndpoints({
      namespace: ref.namespace,
      body: {
        metadata: { name: ref.name },
        subsets: [{ ...(ready ? { addresses: address } : { notReadyAddresses: address }), ports: [{ port: 9443 }] }],
      },
    });
  };
  await service(SHIM, true);
  await service(HYPERSHIFT_WEBHOOK, false);

  for (const ns of ['openshift-cluster-api', 'clusters', 'clusters-guest', 'clusters-rolled-back', 'clusters-half'])
    await s.namespace(ns);
  const platform = 'openshift-cluster-api';
  // v1beta1 objects carry the v1beta2 conditions under status.v1beta2 (api/core/v1beta1/cluster_types.go)
  await s.create(
    CLUSTER,
    { name: 'sno', namespace: platform },
    {},
    {
      phase: 'Provisioned',
      infrastructureReady: true,
      conditions: [condition('Ready', 'True', '')],
      v1beta2: v1beta2True('Available'),
    },
  );
  await s.create(
    CLUSTER,
    { name: 'legacy', namespace: platform },
    {},
    {
      phase: 'Provisioned',
      conditions: [
        {
          ...condition('Ready', 'False', 'WaitingForControlPlane', 'control plane not yet initialized'),
          severity: 'Info',
        },
      ],
    },
  );
  await s.create(
    MACHINE,
    { name: 'sno-master-0', namespace: platform },
    { clusterName: 'sno' },
    { phase: 'Running', v1beta2: v1beta2True('Ready', 'NodeHealthy', 'Available') },
  );
  await s.create(
    MACHINE,
    { name: 'sno-node-unhealthy', namespace: platform },
    { clusterName: 'sno' },
    {
      phase: 'Running',
      v1beta2: {
        conditions: [
          condition('Ready', 'False', 'NotReady', '* NodeHealthy: Node sno-0: kubelet stopped posting node status'),
          condition('NodeHealthy', 'False', 'NodeConditionsFailed', 'Node sno-0: kubelet stopped posting node status'),
          condition('Available', 'False', 'NotReady'),
        ],
      },
    },
  );
  await s.create(
    MACHINE,
    { name: 'sno-failed', namespace: platform },
    { clusterName: 'sno' },
    { phase: 'Failed', failureReason: 'CreateError', failureMessage: 'machine sno-failed: no capacity on host bm-2' },
  );

  for (const [name, ready] of [
    ['workers', 2],
    ['workers-short', 1],
  ] as const)
    await s.create(
      MACHINE_DEPLOYMENT,
      { name, namespace: platform },
      { clusterName: 'sno', replicas: 2 },
      { replicas: 2, readyReplicas: ready },
    );

  // HyperShift's private copies, written as v1beta2: the deprecated fields under status.deprecated.v1beta1
  await s.create(
    PRIVATE_CLUSTER,
    { name: 'guest', namespace: 'clusters-guest' },
    {},
    { phase: 'Provisioned', ...v1beta2True('Available') },
  );
  await s.create(
    PRIVATE_MACHINE,
    { name: 'guest-worker-1', namespace: 'clusters-guest' },
    { clusterName: 'guest' },
    { phase: 'Running', ...v1beta2True('Ready', 'NodeHealthy', 'Available') },
  );
  await s.create(
    PRIVATE_MACHINE,
    { name: 'guest-worker-0', namespace: 'clusters-guest' },
    { clusterName: 'guest' },
    {
      phase: 'Failed',
      conditions: [
        condition('NodeHealthy', 'False', 'NodeDeleted', 'Node guest-worker-0 is gone'),
        condition('Ready', 'False', 'NotReady', '* NodeHealthy: Node guest-worker-0 is gone'),
      ],
      deprecated: { v1beta1: { failureReason: 'UpdateError', failureMessage: 'instance i-0abc1234 terminated' } },
    },
  );

  // the migration controller's marks (private-capi-types.md, "Migration Process" and "Failure Handling"):
  // in progress, it holds the lock and pauses the Cluster it copies; a rollback deletes the copies,
  // unpauses the Cluster and keeps scope legacy
  const hostedCluster = (name: string, annotations: Record<string, string>) =>
    s.create(HOSTED_CLUSTER, { name, namespace: 'clusters', annotations }, { release: { image: 'ocp-release' } });
  await hostedCluster('migrated', { [`${HS}private-capi-types`]: 'true' });
  await hostedCluster('guest', { [`${HS}migration-in-progress`]: 'true', [`${HS}scope`]: 'legacy' });
  await s.create(CLUSTER, { name: 'guest', namespace: 'clusters-guest' }, { paused: true }, { phase: 'Provisioned' });
  await hostedCluster('rolled-back', { [`${HS}migration-failed`]: 'health-check-timeout', [`${HS}scope`]: 'legacy' });
  await s.create(
    CLUSTER,
    { name: 'rolled-back', namespace: 'clusters-rolled-back' },
    {},
    { phase: 'Provisioned', v1beta2: v1beta2True('Available') },
  );
  await hostedCluster('half', { [`${HS}migration-failed`]: 'resource-conversion-failed', [`${HS}scope`]: 'legacy' });
  await s.create(PRIVATE_CLUSTER, { name: 'half', namespace: 'clusters-half' }, {}, { phase: 'Provisioned' });

  // HyperShift's CRD storage migrator, stopped by an error (openshift/hypershift support/capi-crdmigrator/status.go)
  await s.namespace('hypershift');
  await core.createNamespacedConfigMap({
    namespace: 'hypershift',
    body: {
      metadata: { name: 'capi-migration-status' },
      data: {
        status: JSON.stringify({
          totalCRDs: 12,
          migratedCRDs: 5,
          conditions: [
            condition('MigrationComplete', 'False', 'MigrationInProgress', '5/12 CRDs migrated'),
            condition('Progressing', 'True', 'MigrationInProgress', '5/12 CRDs migrated'),
            condition(
              'Degraded',
              'True',
              'MigrationError',
              'failed to migrate machinedeployments.cluster.x-k8s.io: Internal error occurred: conversion webhook for cluster.x-k8s.io/v1beta1, Kind=MachineDeployment failed',
            ),
          ],
        }),
      },
    },
  });

  // an upgrade that stopped serving v1beta1 before the storage migration ran: objects may still be
  // stored as v1beta1 (status.storedVersions keeps it) while no one can read them
  const crds = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' };
  const name = `machines.${PRIVATE}`;
  await custom.patchClusterCustomObjectStatus({
    ...crds,
    name,
    body: [{ op: 'replace', path: '/status/storedVersions', value: ['v1beta1', 'v1beta2'] }],
  });
  await custom.patchClusterCustomObject({
    ...crds,
    name,
    body: [{ op: 'replace', path: '/spec/versions/0/served', value: false }],
  });
}
