import { describe, expect, it } from 'vitest';
import type { Site } from '../config/site.js';
import type { ClusterFacts } from '../node/rename-preflight.js';
import { addressChange, nodeRenameStep, type NodeRenameView } from './node-rename.js';

const quiet: ClusterFacts = {
  pinnedVolumes: [],
  nodeFinalizers: [],
  lvmClusters: [],
  perNodeConfig: [],
  operators: [
    { kind: 'Etcd', latestAvailableRevision: 7, nodeStatuses: [{ nodeName: 'sno-factory', currentRevision: 7 }] },
  ],
  healthChecks: [],
  updatingPools: [],
  pendingCsrs: [],
};
const site = (nodeName?: 'keep' | 'rename') => ({ hostname: 'store-0042', ...(nodeName && { nodeName }) }) as Site;
const pending = (
  cluster: Partial<ClusterFacts> = {},
  startupMonitor = false,
  more: { addressChange?: string; waitedMinutes?: number } = {},
): NodeRenameView => ({
  current: 'sno-factory',
  kubeletEnv: 'KUBELET_NODE_NAME=sno-factory\n',
  pending: {
    cluster: { ...quiet, ...cluster },
    node: { startupMonitor, ...(more.addressChange !== undefined && { addressChange: more.addressChange }) },
    present: [],
    etcdCerts: [],
    ...(more.waitedMinutes !== undefined && { waitedMinutes: more.waitedMinutes }),
  },
});

describe('node-rename decisions, on plain views', () => {
  it.each<[string, NodeRenameView, Site, string]>([
    ['no rename asked', { current: 'sno-factory' }, site(), 'noop'],
    ['keep asked', { current: 'sno-factory' }, site('keep'), 'noop'],
    ['renamed already', { current: 'store-0042' }, site('rename'), 'noop'],
    ['nothing refuses', pending(), site('rename'), 'change'],
    ['a claim pinned', pending({ pinnedVolumes: ['PersistentVolumeClaim a/b'] }), site('rename'), 'declined'],
    ['LVMS finalizer', pending({ nodeFinalizers: ['topolvm.io/node'] }), site('rename'), 'declined'],
    [
      'per-node config',
      pending({ perNodeConfig: ['PtpConfig openshift-ptp/grandmaster'] }),
      site('rename'),
      'declined',
    ],
    ['a health check', pending({ healthChecks: ['MachineHealthCheck m/masters'] }), site('rename'), 'declined'],
    ['startup monitor', pending({}, true), site('rename'), 'declined'],
    ['a pool updating', pending({ updatingPools: ['MachineConfigPool master'] }), site('rename'), 'declined'],
    ['a pending request', pending({ pendingCsrs: ['csr-7x2k'] }), site('rename'), 'declined'],
    ['the address moved', pending({}, false, { addressChange: 'a -> b' }), site('rename'), 'declined'],
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
      action: 'declined',
      reason:
        'rename sno-factory -> store-0042 refused, the Node keeps the name sno-factory: static-pod operators are mid-rollout: KubeScheduler/cluster; a MachineHealthCheck covers the node: MachineHealthCheck openshift-machine-api/masters; run again once nothing refuses',
    });
  });

  it('says a run waits for the reasons that pass by themselves when nothing else refuses', () => {
    expect(nodeRenameStep.plan(pending({ updatingPools: ['MachineConfigPool master'] }), site('rename'))).toEqual({
      action: 'declined',
      reason:
        'rename sno-factory -> store-0042 refused, the Node keeps the name sno-factory: machine-config pools are not Updated: MachineConfigPool master (a run waits up to 20 min for them first); run again once nothing refuses',
    });
  });

  it('says a run waited for the reasons that pass by themselves, and for how long', () => {
    const plan = nodeRenameStep.plan(
      pending({ pendingCsrs: ['csr-7x2k'] }, false, { waitedMinutes: 20 }),
      site('rename'),
    );
    expect(plan).toEqual({
      action: 'declined',
      reason:
        'rename sno-factory -> store-0042 refused, the Node keeps the name sno-factory: certificate signing requests are pending: csr-7x2k (still so after 20 min of waiting); run again once nothing refuses',
    });
  });

  it.each<[string, string | undefined, string | undefined]>([
    ['no internal IP in the site-config: the factory one is kept', undefined, undefined],
    ['the same address, another prefix', '192.168.127.10/16', undefined],
    ['another address', '192.168.127.20/24', '192.168.127.10/24 at the factory, 192.168.127.20/24 at the site'],
  ])('an IP change against the factory record: %s', (_, internalIP, change) => {
    const record = {
      version: 1 as const,
      installAddress: '192.168.127.10/24',
      installSubnet: '192.168.127.0/24',
      internalIP: '192.168.127.10/24',
      preparedAt: '2026-01-01T00:00:00.000Z',
    };
    expect(addressChange(record, { network: { ...(internalIP && { internalIP }) } } as Site)).toBe(change);
    expect(addressChange(undefined, { network: { internalIP: '10.0.0.1/24' } } as Site)).toBeUndefined();
  });

  it('lists kubelet and the pod sandboxes stopped before the files change, kubelet started after kubelet-env names the new name', () => {
    const view = pending();
    view.pending!.present = ['/var/lib/ovn-ic/etc/ovnnb_db.db'];
    view.pending!.etcdCerts = ['etcd-peer-sno-factory.crt'];
    const plan = nodeRenameStep.plan(view, site('rename'));
    expect(plan.action === 'change' && plan.changes.map((c) => `${c.action} ${c.target}`)).toEqual([
      'create <state-dir>/node-rename.json',
      'set kubelet.service',
      'delete CRI-O pod sandboxes',
      'delete /var/lib/ovn-ic/etc/ovnnb_db.db',
      'create /etc/kubernetes/static-pod-resources/etcd-certs/secrets/etcd-all-certs/etcd-peer-store-0042.crt',
      'update /etc/kubernetes/kubelet-env',
      'start kubelet.service',
      "approve kubelet's requests for store-0042",
    ]);
    expect(plan.action === 'change' && plan.decision).toEqual({
      record: { from: 'sno-factory', to: 'store-0042' },
      remove: ['/var/lib/ovn-ic/etc/ovnnb_db.db'],
      copy: [
        {
          from: '/etc/kubernetes/static-pod-resources/etcd-certs/secrets/etcd-all-certs/etcd-peer-sno-factory.crt',
          to: '/etc/kubernetes/static-pod-resources/etcd-certs/secrets/etcd-all-certs/etcd-peer-store-0042.crt',
        },
      ],
      kubeletEnv: 'KUBELET_NODE_NAME=store-0042\n',
    });
  });

  it('keeps the lines of kubelet-env other than the name, and lays one down where there is none', () => {
    const kept = pending();
    kept.kubeletEnv = '# kept\nKUBELET_NODE_NAME=sno-factory\nOTHER=1\n';
    const none = pending();
    delete none.kubeletEnv;
    const laid = [kept, none].map((v) => {
      const plan = nodeRenameStep.plan(v, site('rename'));
      return plan.action === 'change' && plan.decision.kubeletEnv;
    });
    expect(laid).toEqual(['# kept\nOTHER=1\nKUBELET_NODE_NAME=store-0042\n', 'KUBELET_NODE_NAME=store-0042\n']);
  });
});
