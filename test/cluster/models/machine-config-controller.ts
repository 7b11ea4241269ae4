/**
 * The machine-config controller's node controller on a single node (openshift/machine-config-operator
 * @ release-4.16 7327bb2359 pkg/controller/node/node_controller.go): for a master Node, with the
 * masters schedulable as on a single node, reconcileMaster (:516-547) calls makeMasterNodeSchedulable
 * (:373-397), which adds the worker role label and takes off the node-role.kubernetes.io/master
 * NoSchedule taint kubelet registers the Node with (templates/master/01-master-kubelet/_base/units/
 * kubelet.service.yaml:43). A master Node stays in the master pool whatever other role labels it has
 * (pkg/helpers/helpers.go GetPoolsForNode). The controller is a pod in
 * openshift-machine-config-operator: it runs only while a kubelet runs the Node it is bound to
 * (pinned-pod.ts).
 */
import { CoreV1Api, type KubeConfig, type V1Taint } from '@kubernetes/client-node';
import { startLoop, type Model } from './loop.js';
import { pinnedPod, seedPinnedPod } from './pinned-pod.js';

export const MASTER_ROLE = 'node-role.kubernetes.io/master';
export const WORKER_ROLE = 'node-role.kubernetes.io/worker';

const NAMESPACE = 'openshift-machine-config-operator';
const POD = 'machine-config-controller-0';

export const seedMachineConfigController = (kc: KubeConfig, node: string): Promise<void> =>
  seedPinnedPod(kc.makeApiClient(CoreV1Api), NAMESPACE, POD, node);

export function startMachineConfigController(kc: KubeConfig, kubeletName: () => string, intervalMs = 200): Model {
  const core = kc.makeApiClient(CoreV1Api);
  const pod = pinnedPod(core, NAMESPACE, POD, kubeletName);
  return startLoop('machine-config-controller', intervalMs, async () => {
    for (const n of (await pod.nodesIfRuns()) ?? []) {
      const labels = n.metadata!.labels ?? {};
      if (!(MASTER_ROLE in labels)) continue;
      const taints: V1Taint[] = (n.spec?.taints ?? []).filter(
        (t) => !(t.key === MASTER_ROLE && t.effect === 'NoSchedule'),
      );
      if (WORKER_ROLE in labels && taints.length === (n.spec?.taints ?? []).length) continue;
      await core.patchNode({
        name: n.metadata!.name!,
        body: [
          { op: 'add', path: '/metadata/labels', value: { ...labels, [WORKER_ROLE]: '' } },
          { op: 'add', path: '/spec/taints', value: taints },
        ],
      });
    }
  });
}
