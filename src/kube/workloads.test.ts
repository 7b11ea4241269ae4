import { describe, expect, it } from 'vitest';
import { type WorkloadKind, workloadNotReady, type WorkloadObject } from './workloads.js';

const obj = (kind: WorkloadKind, spec: WorkloadObject['spec'], status: WorkloadObject['status']): WorkloadObject => ({
  apiVersion: 'apps/v1',
  kind,
  metadata: { name: 'w', namespace: 'vdu', generation: 2 },
  spec,
  status: { observedGeneration: 2, ...status },
});

describe('workload readiness (as kubectl rollout status)', () => {
  it.each<[string, WorkloadObject, string | undefined]>([
    [
      'deployment rolled out',
      obj('Deployment', { replicas: 2 }, { replicas: 2, updatedReplicas: 2, availableReplicas: 2 }),
      undefined,
    ],
    [
      'deployment whose controller lags',
      { ...obj('Deployment', { replicas: 1 }, {}), status: { observedGeneration: 1 } },
      'its controller has not seen the latest spec yet',
    ],
    [
      'deployment half updated',
      obj('Deployment', { replicas: 2 }, { replicas: 2, updatedReplicas: 1 }),
      '1 of 2 replicas updated',
    ],
    [
      'deployment with old replicas left',
      obj('Deployment', { replicas: 2 }, { replicas: 3, updatedReplicas: 2, availableReplicas: 2 }),
      '1 old replicas still running',
    ],
    [
      'deployment past its progress deadline',
      obj(
        'Deployment',
        { replicas: 1 },
        {
          conditions: [
            {
              type: 'Progressing',
              status: 'False',
              reason: 'ProgressDeadlineExceeded',
              message: 'ReplicaSet "w-1" has timed out progressing.',
            },
          ],
        },
      ),
      'rollout stuck: ReplicaSet "w-1" has timed out progressing.',
    ],
    ['statefulset not ready', obj('StatefulSet', { replicas: 3 }, { readyReplicas: 2 }), '2 of 3 replicas ready'],
    [
      'statefulset mid-revision',
      obj('StatefulSet', { replicas: 1 }, { readyReplicas: 1, currentRevision: 'a', updateRevision: 'b' }),
      'rolling out revision b',
    ],
    [
      'statefulset partitioned and done up to the partition',
      obj(
        'StatefulSet',
        { replicas: 3, updateStrategy: { rollingUpdate: { partition: 2 } } },
        { readyReplicas: 3, updatedReplicas: 1, currentRevision: 'a', updateRevision: 'b' },
      ),
      undefined,
    ],
    [
      'daemonset available',
      obj('DaemonSet', {}, { desiredNumberScheduled: 1, updatedNumberScheduled: 1, numberAvailable: 1 }),
      undefined,
    ],
    [
      'daemonset not available',
      obj('DaemonSet', {}, { desiredNumberScheduled: 1, updatedNumberScheduled: 1, numberAvailable: 0 }),
      '0 of 1 pods available',
    ],
  ])('%s', (_name, o, why) => {
    expect(workloadNotReady(o.kind as WorkloadKind, o)).toBe(why);
  });
});
