/**
 * Whether a Deployment, StatefulSet or DaemonSet has rolled out and is available: the conditions
 * `kubectl rollout status` waits for (kubernetes/kubectl pkg/polymorphichelpers/rollout_status.go:
 * DeploymentStatusViewer, StatefulSetStatusViewer, DaemonSetStatusViewer), read from the status its
 * controller writes.
 */
import type { KubeObject } from '../ports/kube.js';

export type WorkloadKind = 'Deployment' | 'StatefulSet' | 'DaemonSet';

export interface WorkloadObject extends KubeObject {
  metadata: KubeObject['metadata'] & { generation?: number };
  spec?: {
    replicas?: number;
    updateStrategy?: { type?: string; rollingUpdate?: { partition?: number } };
  };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    readyReplicas?: number;
    currentRevision?: string;
    updateRevision?: string;
    desiredNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberAvailable?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

/** Why the workload is not ready yet, or undefined when it is. */
export function workloadNotReady(kind: WorkloadKind, obj: WorkloadObject): string | undefined {
  const status = obj.status ?? {};
  const generation = obj.metadata.generation ?? 0;
  if ((status.observedGeneration ?? 0) < generation) return 'its controller has not seen the latest spec yet';
  const n = (v: number | undefined) => v ?? 0;
  switch (kind) {
    case 'Deployment': {
      const progressing = status.conditions?.find((c) => c.type === 'Progressing');
      if (progressing?.reason === 'ProgressDeadlineExceeded')
        return `rollout stuck: ${progressing.message ?? ''}`.trim();
      const want = obj.spec?.replicas ?? 1;
      if (n(status.updatedReplicas) < want) return `${n(status.updatedReplicas)} of ${want} replicas updated`;
      if (n(status.replicas) > n(status.updatedReplicas))
        return `${n(status.replicas) - n(status.updatedReplicas)} old replicas still running`;
      if (n(status.availableReplicas) < n(status.updatedReplicas))
        return `${n(status.availableReplicas)} of ${n(status.updatedReplicas)} replicas available`;
      return undefined;
    }
    case 'StatefulSet': {
      const want = obj.spec?.replicas ?? 1;
      if (n(status.readyReplicas) < want) return `${n(status.readyReplicas)} of ${want} replicas ready`;
      const strategy = obj.spec?.updateStrategy;
      if (strategy?.type === 'OnDelete') return undefined;
      const partition = strategy?.rollingUpdate?.partition ?? 0;
      if (partition > 0) {
        if (n(status.updatedReplicas) < want - partition)
          return `${n(status.updatedReplicas)} of ${want - partition} replicas updated`;
        return undefined;
      }
      if (status.updateRevision !== status.currentRevision) return `rolling out revision ${status.updateRevision}`;
      return undefined;
    }
    case 'DaemonSet': {
      const want = n(status.desiredNumberScheduled);
      if (n(status.updatedNumberScheduled) < want) return `${n(status.updatedNumberScheduled)} of ${want} pods updated`;
      if (n(status.numberAvailable) < want) return `${n(status.numberAvailable)} of ${want} pods available`;
      return undefined;
    }
  }
}
