/**
 * A control-plane pod on a single node, as the models of its operator see it: bound to a Node
 * (spec.nodeName), it runs only while a kubelet runs that Node. The control plane's pods tolerate
 * the unreachable and not-ready taints with no tolerationSeconds (e.g. cluster-network-operator
 * @ release-4.16 bindata/network/ovn-kubernetes/self-hosted/ovnkube-control-plane.yaml:171-194), so
 * no eviction moves them: a pod leaves its Node only when the Node is deleted (pod garbage
 * collection), and its Deployment's next pod is scheduled on a Node that exists, kubelet's when it
 * has one. The node's kubelet is the test's: `kubeletName()` is the name it runs under now.
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { isNotFound } from './loop.js';

export interface PinnedPod {
  /** the Node the pod is bound to now (after garbage collection and rescheduling) */
  node(): Promise<string | undefined>;
  /**
   * The Nodes when the pod runs (kubelet runs its Node), else undefined. The Nodes are listed before
   * kubelet's name is read: a Node that kubelet registered under a new name, once the pod's kubelet
   * had stopped, is in the list only if the name read after it shows that kubelet gone.
   */
  nodesIfRuns(): Promise<V1Node[] | undefined>;
}

export async function seedPinnedPod(core: CoreV1Api, namespace: string, name: string, node: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => undefined);
  await createPod(core, namespace, name, node);
}

function createPod(core: CoreV1Api, namespace: string, name: string, node: string) {
  return core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, namespace },
      spec: {
        nodeName: node,
        containers: [{ name, image: name }],
        tolerations: [
          { key: 'node.kubernetes.io/unreachable', operator: 'Exists' },
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists' },
        ],
      },
    },
  });
}

export function pinnedPod(core: CoreV1Api, namespace: string, name: string, kubeletName: () => string): PinnedPod {
  const bound = async () => {
    try {
      return (await core.readNamespacedPod({ namespace, name })).spec?.nodeName;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  };
  /** where the pod is bound, after garbage collection and rescheduling, and the Nodes listed for it */
  const place = async () => {
    const nodes = (await core.listNode()).items;
    const names = nodes.map((n) => n.metadata!.name!);
    let on = await bound();
    if (on !== undefined && !names.includes(on)) {
      await core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 });
      on = undefined;
    }
    if (on === undefined && names.length > 0) {
      on = names.includes(kubeletName()) ? kubeletName() : names[0]!;
      await createPod(core, namespace, name, on);
    }
    return { on, nodes };
  };
  return {
    node: async () => (await place()).on,
    nodesIfRuns: async () => {
      const { on, nodes } = await place();
      return on === kubeletName() ? nodes : undefined;
    },
  };
}
