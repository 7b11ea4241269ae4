/**
 * TopoLVM's node finalizer as LVMS runs it. LVMS's vgmanager puts the finalizer topolvm.io/node on
 * the Node (lvm-operator @ release-4.16 90af0b7eb8 cmd/vgmanager/vgmanager.go:179; topolvm
 * internal/runners/metrics_exporter.go:247) and the LVMS operator runs TopoLVM's NodeReconciler
 * with skipNodeFinalize=false (cmd/operator/operator.go:260; release-4.18 :264). On a Node being
 * deleted that carries the finalizer, the reconciler deletes every PersistentVolumeClaim of a
 * TopoLVM StorageClass whose annotation volume.kubernetes.io/selected-node names that Node, then
 * removes the finalizer (topolvm/topolvm @ 83e3dcee2f internal/controller/node_controller.go:42-144;
 * docs/topolvm-controller.md:150-158). Which StorageClass is TopoLVM's is given (LVMS names it
 * lvms-<device class>, its provisioner topolvm.io).
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { startLoop, type Model } from './loop.js';

export const TOPOLVM_FINALIZER = 'topolvm.io/node';
export const SELECTED_NODE = 'volume.kubernetes.io/selected-node';

export interface TopolvmModel extends Model {
  /** claims the finalizer deleted: `namespace/name` */
  deletedClaims: string[];
}

export function startTopolvm(kc: KubeConfig, storageClass: string, intervalMs = 200): TopolvmModel {
  const core = kc.makeApiClient(CoreV1Api);
  const deletedClaims: string[] = [];
  const loop = startLoop('topolvm-node-finalizer', intervalMs, async () => {
    for (const node of (await core.listNode()).items) {
      const name = node.metadata!.name!;
      const finalizers = node.metadata!.finalizers ?? [];
      if (!node.metadata!.deletionTimestamp || !finalizers.includes(TOPOLVM_FINALIZER)) continue;
      for (const pvc of (await core.listPersistentVolumeClaimForAllNamespaces()).items) {
        if (pvc.spec?.storageClassName !== storageClass || pvc.metadata?.annotations?.[SELECTED_NODE] !== name)
          continue;
        await core.deleteNamespacedPersistentVolumeClaim({
          namespace: pvc.metadata.namespace!,
          name: pvc.metadata.name!,
        });
        deletedClaims.push(`${pvc.metadata.namespace}/${pvc.metadata.name}`);
      }
      await core.patchNode({
        name,
        body: [
          { op: 'replace', path: '/metadata/finalizers', value: finalizers.filter((f) => f !== TOPOLVM_FINALIZER) },
        ],
      });
    }
  });
  return Object.assign(loop, { deletedClaims });
}
