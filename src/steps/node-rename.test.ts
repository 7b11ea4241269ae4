import { describe, expect, it } from 'vitest';
import type { Site } from '../config/site.js';
import type { ClusterFacts } from '../node/rename-preflight.js';
import { nodeRenameStep, type NodeRenameView } from './node-rename.js';

const quiet: ClusterFacts = {
  pinnedVolumes: [],
  nodeFinalizers: [],
  lvmClusters: [],
  perNodeConfig: [],
  operators: [
    { kind: 'Etcd', latestAvailableRevision: 7, nodeStatuses: [{ nodeName: 'sno-factory', currentRevision: 7 }] },
  ],
  healthChecks: [],
};
const site = (nodeName?: 'keep' | 'rename') => ({ hostname: 'store-0042', ...(nodeName && { nodeName }) }) as Site;
const pending = (cluster: Partial<ClusterFacts> = {}, startupMonitor = false): NodeRenameView => ({
  current: 'sno-factory',
  kubeletEnv: 'KUBELET_NODE_NAME=sno-factory\n',
  pending: { cluster: { ...quiet, ...cluster }, node: { startupMonitor }, present: [], etcdCerts: [] },
});

describe('node-rename decisions, on plain views', () => {
  it.each<[string, NodeRenameView, Site, string]>([
    ['no rename asked', { current: 'sno-factory' }, site(), 'noop'],
    ['keep asked', { current: 'sno-factory' }, site('keep'), 'noop'],
    ['renamed already', { current: 'store-0042' }, site('rename'), 'noop'],
    ['nothing refuses', pending(), site('rename'), 'change'],
    ['a claim pinned', pending({ pinnedVolumes: ['PersistentVolumeClaim a/b'] }), site('rename'), 'conflict'],
    ['LVMS finalizer', pending({ nodeFinalizers: ['topolvm.io/node'] }), site('rename'), 'conflict'],
    [
      'per-node config',
      pending({ perNodeConfig: ['PtpConfig openshift-ptp/grandmaster'] }),
      site('rename'),
      'conflict',
    ],
    ['a health check', pending({ healthChecks: ['MachineHealthCheck m/masters'] }), site('rename'), 'conflict'],
    ['startup monitor', pending({}, true), site('rename'), 'conflict'],
  ])('%s: %s', (_, view, s, action) => {
    expect(nodeRenameStep.plan(view, s).action).toBe(action);
  });

  it('names the Node it keeps and every reason, in one line', () => {
    const plan = nodeRenameStep.plan(
      pending({
        operators: [
          {
            kind: 'KubeScheduler',
            latestAvailableRevision: 8,
            nodeStatuses: [{ nodeName: 'sno-factory', currentRevision: 7 }],
          },
        ],
        healthChecks: ['MachineHealthCheck openshift-machine-api/masters'],
      }),
      site('rename'),
    );
    expect(plan).toEqual({
      action: 'conflict',
      reason:
        'rename sno-factory -> store-0042 refused, the Node keeps the name sno-factory: static-pod operators are mid-rollout: KubeScheduler/cluster; a MachineHealthCheck covers the node: MachineHealthCheck openshift-machine-api/masters',
    });
  });

  it('lists kubelet stopped before the files change and started after kubelet-env names the new name', () => {
    const view = pending();
    view.pending!.present = ['/var/lib/ovn-ic/etc/ovnnb_db.db'];
    view.pending!.etcdCerts = ['etcd-peer-sno-factory.crt'];
    const plan = nodeRenameStep.plan(view, site('rename'));
    expect(plan.action === 'change' && plan.changes.map((c) => `${c.action} ${c.target}`)).toEqual([
      'create <state-dir>/node-rename.json',
      'set kubelet.service',
      'delete /var/lib/ovn-ic/etc/ovnnb_db.db',
      'create /etc/kubernetes/static-pod-resources/etcd-certs/secrets/etcd-all-certs/etcd-peer-store-0042.crt',
      'update /etc/kubernetes/kubelet-env',
      'start kubelet.service',
      "approve kubelet's requests for store-0042",
    ]);
  });
});
