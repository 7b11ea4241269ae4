/**
 * OVN-Kubernetes' control plane on a single node, and the readiness kubelet reports:
 *
 * - the cluster manager (ovnkube-control-plane) allocates each Node a subnet, the annotation
 *   k8s.ovn.org/node-subnets, and releases a Node's only when that Node is deleted (ovn-org/
 *   ovn-kubernetes @ 6c366bb49d go-controller/pkg/clustermanager/node/node_allocator.go:202-300,
 *   321-333);
 * - its pod is bound to a Node and tolerates node.kubernetes.io/unreachable and not-ready with
 *   operator Exists and no tolerationSeconds (openshift/cluster-network-operator @ release-4.16
 *   69b8dae17b bindata/network/ovn-kubernetes/self-hosted/ovnkube-control-plane.yaml:171-194): it
 *   runs only where a kubelet runs its Node, and leaves it only when the Node is deleted
 *   (pinned-pod.ts);
 * - ovnkube-node waits up to 300 s for its Node's subnet and fails without it
 *   (default_node_network_controller.go:898-913), and multus exits without the OVN CNI config
 *   (openshift/multus-cni @ release-4.16 cmd/multus-daemon/main.go:75-81), so kubelet's Node is
 *   Ready only once it has a subnet; a Node no kubelet runs is not Ready.
 *
 * The node's kubelet is the test's: `kubeletName()` is the name it runs under now.
 */
import { CoreV1Api, type KubeConfig, type V1NodeCondition } from '@kubernetes/client-node';
import { now, startLoop, type Model } from './loop.js';
import { pinnedPod, seedPinnedPod } from './pinned-pod.js';

export const OVN_NAMESPACE = 'openshift-ovn-kubernetes';
export const CONTROL_PLANE_POD = 'ovnkube-control-plane-0';
export const NODE_SUBNETS = 'k8s.ovn.org/node-subnets';

export interface OvnModel extends Model {
  /** the Node the control plane's pod is bound to now */
  podNode(): Promise<string | undefined>;
}

export async function seedOvnControlPlane(kc: KubeConfig, node: string): Promise<void> {
  await seedPinnedPod(kc.makeApiClient(CoreV1Api), OVN_NAMESPACE, CONTROL_PLANE_POD, node);
}

export function startOvnControlPlane(kc: KubeConfig, kubeletName: () => string, intervalMs = 200): OvnModel {
  const core = kc.makeApiClient(CoreV1Api);
  const pod = pinnedPod(core, OVN_NAMESPACE, CONTROL_PLANE_POD, kubeletName);
  const loop = startLoop('ovn-control-plane', intervalMs, async () => {
    for (const n of ((await pod.nodesIfRuns()) ?? []).filter(
      (n) => n.metadata!.annotations?.[NODE_SUBNETS] === undefined,
    ))
      await core.patchNode({
        name: n.metadata!.name!,
        body: [
          {
            op: 'add',
            path: '/metadata/annotations',
            value: { ...n.metadata!.annotations, [NODE_SUBNETS]: '{"default":["10.128.0.0/23"]}' },
          },
        ],
      });
    // kubelet's Ready condition for its own Node; a Node without a kubelet is not Ready
    for (const n of (await core.listNode()).items) {
      const mine = n.metadata!.name === kubeletName();
      const ready = mine && n.metadata!.annotations?.[NODE_SUBNETS] !== undefined;
      const want: V1NodeCondition = {
        type: 'Ready',
        status: ready ? 'True' : mine ? 'False' : 'Unknown',
        reason: ready ? 'KubeletReady' : mine ? 'KubeletNotReady' : 'NodeStatusUnknown',
      };
      const have = n.status?.conditions?.find((c) => c.type === 'Ready');
      if (have?.status === want.status) continue;
      await core.patchNodeStatus({
        name: n.metadata!.name!,
        body: [{ op: 'add', path: '/status/conditions', value: [{ ...want, lastTransitionTime: now() }] }],
      });
    }
  });
  return Object.assign(loop, { podNode: () => pod.node() });
}
