/**
 * The rename preflight finds every object whose spec names the node, of any kind the API serves,
 * on a real kube-apiserver: kinds it has no fast path for (a Tuned profile matching the hostname
 * label, a PerformanceProfile and a LocalVolumeDiscovery selecting the node by hostname, a
 * Deployment pinned by nodeName, a kind of an operator nobody told it about) are each a reason,
 * named. A seeded factory cluster gives none, a Pod on the node is none (it is scheduled again),
 * and an object naming the node only in its status is none. The CRDs keep only the group, kind
 * and scope of upstream's (the preflight reads the objects as they come):
 * - cluster-node-tuning-operator pkg/apis/tuned/v1/tuned_types.go: Tuned, namespaced,
 *   spec.recommend[].match[] {label, value};
 * - openshift/api performance/v2 PerformanceProfile: cluster-scoped, spec.nodeSelector;
 * - local-storage-operator api/v1alpha1 LocalVolumeDiscovery: namespaced, spec.nodeSelector.nodeSelectorTerms.
 */
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKube } from '../../src/kube/client.js';
import { renameRefusals, surveyCluster } from '../../src/node/rename-preflight.js';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { createSchemalessCrds, type SchemalessKind } from '../kube/schemaless-crds.js';
import { memoryLogger, startFactory, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const HOSTNAME_LABEL = 'kubernetes.io/hostname';

const KINDS: SchemalessKind[] = [
  { group: 'tuned.openshift.io', version: 'v1', kind: 'Tuned', plural: 'tuneds', namespaced: true },
  {
    group: 'performance.openshift.io',
    version: 'v2',
    kind: 'PerformanceProfile',
    plural: 'performanceprofiles',
    namespaced: false,
  },
  {
    group: 'local.storage.openshift.io',
    version: 'v1alpha1',
    kind: 'LocalVolumeDiscovery',
    plural: 'localvolumediscoveries',
    namespaced: true,
  },
  // an operator nobody told the agent about
  {
    group: 'gadgets.store.example.com',
    version: 'v1',
    kind: 'Gadget',
    plural: 'gadgets',
    namespaced: true,
    status: true,
  },
];

describe.skipIf(kubeSkipped)('the rename preflight scans every kind the API serves', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  const survey = () => surveyCluster(createKube(kc, memoryLogger().log), FACTORY_NODE_NAME);

  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    kc = env.cluster.kubeConfig();
    await createSchemalessCrds(kc, KINDS);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'store-apps' } } });
  }, 120_000);
  afterAll(async () => env?.stop());

  it('a factory cluster, a Pod on the node and an object naming it in its status only: no reason', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({
      namespace: 'store-apps',
      body: {
        metadata: { name: 'storefront-0' },
        spec: { nodeName: FACTORY_NODE_NAME, containers: [{ name: 'web', image: 'registry.example.com/web:1' }] },
      },
    });
    const custom = kc.makeApiClient(CustomObjectsApi);
    const gadget = await custom.createNamespacedCustomObject({
      group: 'gadgets.store.example.com',
      version: 'v1',
      namespace: 'store-apps',
      plural: 'gadgets',
      body: { apiVersion: 'gadgets.store.example.com/v1', kind: 'Gadget', metadata: { name: 'observer' }, spec: {} },
    });
    await custom.replaceNamespacedCustomObjectStatus({
      group: 'gadgets.store.example.com',
      version: 'v1',
      namespace: 'store-apps',
      plural: 'gadgets',
      name: 'observer',
      body: { ...(gadget as object), status: { seenOn: FACTORY_NODE_NAME } },
    });
    expect((await survey()).perNodeConfig).toEqual([]);
  });

  it('Tuned, PerformanceProfile, LocalVolumeDiscovery, a pinned Deployment and an unknown kind naming the node: each a reason, named', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const byHostname = { [HOSTNAME_LABEL]: FACTORY_NODE_NAME };
    const put = (k: SchemalessKind, name: string, spec: object, namespace?: string) =>
      namespace
        ? custom.createNamespacedCustomObject({
            group: k.group,
            version: k.version,
            namespace,
            plural: k.plural,
            body: { apiVersion: `${k.group}/${k.version}`, kind: k.kind, metadata: { name }, spec },
          })
        : custom.createClusterCustomObject({
            group: k.group,
            version: k.version,
            plural: k.plural,
            body: { apiVersion: `${k.group}/${k.version}`, kind: k.kind, metadata: { name }, spec },
          });
    const [tuned, profile, discovery, gadget] = KINDS as [
      SchemalessKind,
      SchemalessKind,
      SchemalessKind,
      SchemalessKind,
    ];
    const core = kc.makeApiClient(CoreV1Api);
    for (const ns of ['openshift-cluster-node-tuning-operator', 'openshift-local-storage'])
      await core.createNamespace({ body: { metadata: { name: ns } } });
    await put(
      tuned,
      'store-realtime',
      {
        profile: [{ name: 'store-realtime', data: '[main]\ninclude=openshift-node\n' }],
        recommend: [
          { profile: 'store-realtime', priority: 20, match: [{ label: HOSTNAME_LABEL, value: FACTORY_NODE_NAME }] },
        ],
      },
      'openshift-cluster-node-tuning-operator',
    );
    await put(profile, 'store-cpus', { cpu: { isolated: '2-7', reserved: '0-1' }, nodeSelector: byHostname });
    await put(
      discovery,
      'auto-discover-devices',
      {
        nodeSelector: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: HOSTNAME_LABEL, operator: 'In', values: [FACTORY_NODE_NAME] }] },
          ],
        },
      },
      'openshift-local-storage',
    );
    await put(gadget, 'till-printer', { attachedTo: FACTORY_NODE_NAME }, 'store-apps');
    await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace: 'store-apps',
      body: {
        metadata: { name: 'till' },
        spec: {
          selector: { matchLabels: { app: 'till' } },
          template: {
            metadata: { labels: { app: 'till' } },
            spec: { nodeSelector: byHostname, containers: [{ name: 'till', image: 'registry.example.com/till:1' }] },
          },
        },
      },
    });

    const facts = await survey();
    expect([...facts.perNodeConfig].sort()).toEqual(
      [
        'Tuned openshift-cluster-node-tuning-operator/store-realtime',
        'PerformanceProfile store-cpus',
        'LocalVolumeDiscovery openshift-local-storage/auto-discover-devices',
        'Gadget store-apps/till-printer',
        'Deployment store-apps/till',
      ].sort(),
    );
    const refusal = renameRefusals(facts, { startupMonitor: false }).find((r) => r.reason.startsWith('objects name'));
    expect(refusal).toMatchObject({ transient: false });
    for (const named of facts.perNodeConfig) expect(refusal!.reason).toContain(named);
  });
});
