/**
 * The watched objects of bench/watch.ts on a cluster already seeded as a factory cluster: CSVs,
 * Subscriptions, InstallPlans and Cluster API Machines spread over 20 namespaces, as many of each as
 * OBJECTS says.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { inPool } from '../test/kube/factory-cluster.js';
import { GVR, Scenario } from '../test/watch/scenario.js';

export const OBJECTS = { csv: 4000, subscription: 3000, installplan: 1000, machine: 2000 };
export const WATCHED_TOTAL = Object.values(OBJECTS).reduce((a, b) => a + b, 0);
const NAMESPACES = Array.from({ length: 20 }, (_, i) => `bench-${String(i).padStart(2, '0')}`);

export async function seedWatchedObjects(kc: KubeConfig): Promise<void> {
  const s = new Scenario(kc);
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const ns of NAMESPACES) await s.namespace(ns);
  const description = 'x'.repeat(1500);
  const ns = (i: number) => NAMESPACES[i % NAMESPACES.length]!;
  await inPool([...Array(OBJECTS.csv).keys()], 32, async (i) => {
    await custom.createNamespacedCustomObject({
      ...GVR.csv,
      namespace: ns(i),
      body: {
        apiVersion: 'operators.coreos.com/v1alpha1',
        kind: 'ClusterServiceVersion',
        metadata: { name: `op-${i}.v1.0.0`, namespace: ns(i) },
        spec: {
          displayName: `Operator ${i}`,
          description,
          version: '1.0.0',
          install: {
            strategy: 'deployment',
            spec: {
              deployments: [
                {
                  name: `op-${i}`,
                  spec: {
                    replicas: 1,
                    template: {
                      spec: {
                        containers: [{ name: 'manager', image: `quay.io/acme/op-${i}@sha256:${'e'.repeat(64)}` }],
                      },
                    },
                  },
                },
              ],
            },
          },
        },
      },
    });
    await s.setStatus(
      GVR.csv,
      `op-${i}.v1.0.0`,
      { phase: 'Succeeded', reason: 'InstallSucceeded', message: 'install strategy completed with no errors' },
      ns(i),
    );
  });
  await inPool([...Array(OBJECTS.subscription).keys()], 32, (i) =>
    custom.createNamespacedCustomObject({
      ...GVR.subscription,
      namespace: ns(i),
      body: {
        apiVersion: 'operators.coreos.com/v1alpha1',
        kind: 'Subscription',
        metadata: { name: `sub-${i}`, namespace: ns(i) },
        spec: {
          name: `op-${i}`,
          source: 'redhat-operators',
          sourceNamespace: 'openshift-marketplace',
          channel: 'stable',
        },
      },
    }),
  );
  await inPool([...Array(OBJECTS.installplan).keys()], 32, (i) =>
    custom.createNamespacedCustomObject({
      group: 'operators.coreos.com',
      version: 'v1alpha1',
      plural: 'installplans',
      namespace: ns(i),
      body: {
        apiVersion: 'operators.coreos.com/v1alpha1',
        kind: 'InstallPlan',
        metadata: { name: `install-${i}`, namespace: ns(i) },
        spec: { approval: 'Automatic', approved: true, clusterServiceVersionNames: [`op-${i}.v1.0.0`] },
      },
    }),
  );
  await inPool([...Array(OBJECTS.machine).keys()], 32, (i) =>
    custom.createNamespacedCustomObject({
      ...GVR.machine,
      namespace: ns(i),
      body: {
        apiVersion: 'cluster.x-k8s.io/v1beta1',
        kind: 'Machine',
        metadata: { name: `machine-${i}`, namespace: ns(i) },
        spec: { clusterName: 'sno', bootstrap: { dataSecretName: 'x' } },
      },
    }),
  );
}
