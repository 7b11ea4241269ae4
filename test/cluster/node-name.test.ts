/**
 * The node's name through a move, on the real API with the models of what is keyed by it (the
 * design before node-name, a new Node under the site hostname, failed against them: see this
 * file's history): the
 * static-pod operators and etcd's per-node revision (models/static-pod-operators.ts), TopoLVM's node
 * finalizer (models/topolvm.ts), the OVN control plane bound to its Node (models/ovn-control-plane.ts)
 * and the machine-config controller (models/machine-config-controller.ts). The node's kubelet is the
 * test's: it registers the Node under the name kubelet would, and the models see it run there.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RefusedError } from '../../src/base/errors.js';
import type { Site } from '../../src/config/site.js';
import { KUBELET_ENV_FILE, SITE_HOSTNAME_ANNOTATION } from '../../src/node/node-name.js';
import { ETCD_CERTS_DIR } from '../../src/node/rename.js';
import { CURRENT_CONFIG } from '../../src/node/rendered-config.js';
import { connectSystemdBus } from '../../src/ports/systemd-dbus.js';
import { startTestBus } from '../dbus/bus.js';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';
import {
  ETCD_NAMESPACE,
  seedStaticPodOperators,
  startStaticPodOperators,
  type StaticPodOperatorsModel,
} from './models/static-pod-operators.js';
import { SELECTED_NODE, startTopolvm, TOPOLVM_FINALIZER, type TopolvmModel } from './models/topolvm.js';
import { seedOvnControlPlane, startOvnControlPlane, type OvnModel } from './models/ovn-control-plane.js';
import {
  MASTER_ROLE,
  seedMachineConfigController,
  startMachineConfigController,
  WORKER_ROLE,
} from './models/machine-config-controller.js';
import type { Model } from './models/loop.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const MACHINE_ID = '0f3c6a1e9b2d4c5f8a7e6d5c4b3a2910';
const SITE_HOSTNAME = 'store-0042-sno';
const REVISION = 7;
const LVMS_CLASS = 'lvms-vg1';
const CLAIM = { namespace: 'shop-app', name: 'orders-db' };

/** What the test's kubelet does when it starts under `name`: register the Node as kubelet does. */
async function kubeletRegisters(core: CoreV1Api, name: string): Promise<void> {
  await core.createNode({
    body: {
      metadata: {
        name,
        labels: {
          'kubernetes.io/hostname': name,
          [MASTER_ROLE]: '',
          'node-role.kubernetes.io/control-plane': '',
        },
      },
      // kubelet.service.yaml --register-with-taints (release-4.16 :43)
      spec: { taints: [{ key: MASTER_ROLE, effect: 'NoSchedule' }] },
    } as V1Node,
  });
  await core.patchNodeStatus({
    name,
    body: [{ op: 'add', path: '/status', value: { nodeInfo: nodeInfo(), conditions: [] } }],
  });
}

const nodeInfo = () => ({
  machineID: MACHINE_ID,
  systemUUID: 'f00dfeed-0000-4000-8000-000000000001',
  bootID: 'b',
  kernelVersion: 'k',
  osImage: 'o',
  containerRuntimeVersion: 'c',
  kubeletVersion: 'v',
  kubeProxyVersion: 'v',
  operatingSystem: 'linux',
  architecture: 'amd64',
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    // polled: the models are timers of their own, with nothing to await on
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(kubeSkipped)('the node name through a move, against the models', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let kubelet: string;
  let operators: StaticPodOperatorsModel;
  let topolvm: TopolvmModel;
  let ovn: OvnModel;
  let models: Model[];
  let bus: Awaited<ReturnType<typeof startTestBus>>;
  beforeAll(async () => {
    bus = await startTestBus();
    process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
  });
  afterAll(() => bus?.stop());

  beforeEach(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    kc = env.cluster.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    kubelet = FACTORY_NODE_NAME;
    await core.patchNodeStatus({
      name: FACTORY_NODE_NAME,
      body: [{ op: 'add', path: '/status', value: { nodeInfo: nodeInfo(), conditions: [] } }],
    });
    await seedStaticPodOperators(kc, FACTORY_NODE_NAME, REVISION);
    await seedOvnControlPlane(kc, FACTORY_NODE_NAME);
    await seedMachineConfigController(kc, FACTORY_NODE_NAME);
    const kubeletName = () => kubelet;
    operators = startStaticPodOperators(kc, kubeletName);
    topolvm = startTopolvm(kc, LVMS_CLASS);
    ovn = startOvnControlPlane(kc, kubeletName);
    models = [operators, topolvm, ovn, startMachineConfigController(kc, kubeletName)];
    // the factory node as it runs: Ready, with its subnet, the master taint already taken off
    await until('the factory Node Ready', async () => {
      const n = await core.readNode({ name: FACTORY_NODE_NAME });
      return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? n : undefined;
    });
  }, 120_000);

  afterEach(async () => {
    await Promise.all(models?.map((m) => m.stop()) ?? []);
    await env?.stop();
  });

  /** an LVMS claim on the node, and the finalizer LVMS's vgmanager puts on its Node */
  async function layLvms() {
    await core.patchNode({
      name: FACTORY_NODE_NAME,
      body: [{ op: 'add', path: '/metadata/finalizers', value: [TOPOLVM_FINALIZER] }],
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: CLAIM.namespace,
      body: {
        metadata: { ...CLAIM, annotations: { [SELECTED_NODE]: FACTORY_NODE_NAME } },
        spec: {
          storageClassName: LVMS_CLASS,
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
        },
      },
    });
  }

  /** Each model has completed two more passes: the second saw what the first wrote. */
  async function settled() {
    const start = models.map((m) => m.passes);
    await until('the models to settle', async () =>
      models.every((m, i) => m.passes >= start[i]! + 2) ? true : undefined,
    );
  }

  /** kubelet's own rule: KUBELET_NODE_NAME from kubelet-env when set, else the lowercased hostname */
  const kubeletName = (root: string) => {
    const env = readFileSync(path.join(root, 'etc/kubernetes/kubelet-env'), 'utf8');
    const pinned = /^KUBELET_NODE_NAME=(.*)$/m.exec(env)?.[1];
    return pinned || readFileSync(path.join(root, 'etc/hostname'), 'utf8').trim().toLowerCase();
  };

  /** a node root as the factory leaves it, the agent's context on it */
  async function factoryRoot(site: Partial<Site>) {
    const a = await agent(env, storeSite({ hostname: SITE_HOSTNAME, ...site }));
    // before the node phase: no kubelet-env yet
    rmSync(path.join(a.root, KUBELET_ENV_FILE));
    mkdirSync(path.join(a.root, 'etc'), { recursive: true });
    writeFileSync(path.join(a.root, 'etc/machine-id'), `${MACHINE_ID}\n`);
    writeFileSync(path.join(a.root, 'etc/hostname'), `${FACTORY_NODE_NAME}\n`);
    return a;
  }

  /** what the hostname and kubelet steps do on a node, and kubelet registering as it does */
  async function hostnameAndKubelet(root: string) {
    writeFileSync(path.join(root, 'etc/hostname'), `${SITE_HOSTNAME}\n`);
    kubelet = kubeletName(root);
    if (kubelet !== FACTORY_NODE_NAME) await kubeletRegisters(core, kubelet);
  }

  it('keeps the Node: etcd, the static pods, OVN, the claims and the taints see no change', async () => {
    await layLvms();
    const a = await factoryRoot({});
    expect((await a.run(['node-name'])).result).toBe('succeeded');
    await hostnameAndKubelet(a.root);
    expect(kubelet).toBe(FACTORY_NODE_NAME);
    expect((await a.run(['node-identity'])).result).toBe('succeeded');
    await settled();

    expect((await core.listNode()).items.map((n) => n.metadata!.name)).toEqual([FACTORY_NODE_NAME]);
    const node = await core.readNode({ name: FACTORY_NODE_NAME });
    expect(node.metadata?.annotations?.[SITE_HOSTNAME_ANNOTATION]).toBe(SITE_HOSTNAME);
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(node.spec?.taints ?? []).not.toContainEqual({ key: MASTER_ROLE, effect: 'NoSchedule' });
    expect(operators.etcdStopped).toBeUndefined();
    expect(operators.installs).toEqual([]);
    expect(await ovn.podNode()).toBe(FACTORY_NODE_NAME);
    expect(topolvm.deletedClaims).toEqual([]);
    expect((await core.readNamespacedPersistentVolumeClaim(CLAIM)).metadata?.deletionTimestamp).toBeUndefined();
    expect((await a.plan(['node-name', 'node-identity'])).map((p) => p.action)).toEqual(['noop', 'noop']);
  });

  it('refuses a rename at plan, naming each reason, and changes nothing', async () => {
    await layLvms();
    await kc.makeApiClient(CustomObjectsApi).patchClusterCustomObjectStatus({
      group: 'operator.openshift.io',
      version: 'v1',
      plural: 'kubeschedulers',
      name: 'cluster',
      body: [{ op: 'add', path: '/status/nodeStatuses/0/targetRevision', value: REVISION + 1 }],
    });
    const a = await factoryRoot({ nodeName: 'rename' });
    a.ctx.systemd = () => connectSystemdBus(a.ctx.log);
    const hostnameSource = `data:,${encodeURIComponent(`${FACTORY_NODE_NAME}\n`)}`;
    mkdirSync(path.join(a.root, 'etc/machine-config-daemon'), { recursive: true });
    writeFileSync(
      path.join(a.root, CURRENT_CONFIG),
      JSON.stringify({
        metadata: { name: 'rendered-master-1' },
        spec: { config: { storage: { files: [{ path: '/etc/hostname', contents: { source: hostnameSource } }] } } },
      }),
    );
    const [plan] = await a.plan(['node-name']);
    expect(plan).toEqual({
      step: 'node-name',
      action: 'conflict',
      reason: [
        `rename ${FACTORY_NODE_NAME} -> ${SITE_HOSTNAME} refused: volumes are pinned to the node's name (LVMS, LSO): PersistentVolumeClaim ${CLAIM.namespace}/${CLAIM.name}`,
        `LVMS is installed (finalizer ${TOPOLVM_FINALIZER} on the Node): deleting the former Node deletes its claims`,
        'static-pod operators are mid-rollout: KubeScheduler/cluster',
        '/etc/hostname is declared by the MachineConfig rendered-master-1: the site hostname would be drift',
      ].join('; '),
    });
    await expect(a.run(['node-name', 'hostname'])).rejects.toThrow(RefusedError);
    expect(existsSync(path.join(a.root, 'etc/kubernetes/kubelet-env'))).toBe(false);
    expect(readFileSync(path.join(a.root, 'etc/hostname'), 'utf8')).toBe(`${FACTORY_NODE_NAME}\n`);
  });

  it('renames where nothing refuses: one etcd revision for the new name, nothing else re-installed', async () => {
    await seedEtcdSecrets(core, FACTORY_NODE_NAME);
    const a = await factoryRoot({ nodeName: 'rename' });
    a.ctx.systemd = () => connectSystemdBus(a.ctx.log);
    const certs = path.join(a.root, ETCD_CERTS_DIR);
    mkdirSync(certs, { recursive: true });
    writeFileSync(path.join(certs, `etcd-peer-${FACTORY_NODE_NAME}.crt`), 'peer certificate');
    mkdirSync(path.join(a.root, 'var/lib/ovn-ic/etc'), { recursive: true });
    writeFileSync(path.join(a.root, 'var/lib/ovn-ic/etc/ovnnb_db.db'), 'old zone');

    expect((await a.run(['node-name'])).result).toBe('succeeded');
    expect(readFileSync(path.join(certs, `etcd-peer-${SITE_HOSTNAME}.crt`), 'utf8')).toBe('peer certificate');
    expect(existsSync(path.join(a.root, 'var/lib/ovn-ic/etc/ovnnb_db.db'))).toBe(false);
    await hostnameAndKubelet(a.root);
    expect(kubelet).toBe(SITE_HOSTNAME);
    // the new Node is not Ready (OVN's control plane is still on the former): node-identity does not wait for it
    expect((await a.run(['node-identity'])).result).toBe('succeeded');

    await until('the new Node Ready', async () => {
      const n = await core.readNode({ name: SITE_HOSTNAME });
      return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? n : undefined;
    });
    await until('etcd on its new revision', async () => (operators.installs.length > 0 ? true : undefined));
    await settled();
    expect(operators.etcdStopped).toBeUndefined();
    expect(operators.installs).toEqual([`Etcd revision ${REVISION + 1} on ${SITE_HOSTNAME}`]);
    expect((await core.listNode()).items.map((n) => n.metadata!.name)).toEqual([SITE_HOSTNAME]);
    const node = await core.readNode({ name: SITE_HOSTNAME });
    expect(node.metadata?.labels?.[WORKER_ROLE]).toBe('');
    expect(node.spec?.taints ?? []).not.toContainEqual({ key: MASTER_ROLE, effect: 'NoSchedule' });
    expect(node.metadata?.annotations?.[SITE_HOSTNAME_ANNOTATION]).toBe(SITE_HOSTNAME);
    expect(await ovn.podNode()).toBe(SITE_HOSTNAME);
    const all = await core.readNamespacedSecret({ namespace: ETCD_NAMESPACE, name: 'etcd-all-certs' });
    expect(Object.keys(all.data ?? {}).sort()).toEqual(
      [FACTORY_NODE_NAME, SITE_HOSTNAME].flatMap((n) => [`etcd-peer-${n}.crt`, `etcd-peer-${n}.key`]),
    );
    expect((await a.plan(['node-name', 'node-identity'])).map((p) => p.action)).toEqual(['noop', 'noop']);
  });
});

/** the etcd operator's per-node secret and the aggregate the installer copies to the node */
async function seedEtcdSecrets(core: CoreV1Api, node: string) {
  const data = {
    'tls.crt': Buffer.from('peer certificate').toString('base64'),
    'tls.key': Buffer.from('peer key').toString('base64'),
  };
  await core.createNamespacedSecret({
    namespace: ETCD_NAMESPACE,
    body: { metadata: { name: `etcd-peer-${node}`, namespace: ETCD_NAMESPACE }, type: 'kubernetes.io/tls', data },
  });
  await core.createNamespacedSecret({
    namespace: ETCD_NAMESPACE,
    body: {
      metadata: { name: 'etcd-all-certs', namespace: ETCD_NAMESPACE },
      data: { [`etcd-peer-${node}.crt`]: data['tls.crt'], [`etcd-peer-${node}.key`]: data['tls.key'] },
    },
  });
}
