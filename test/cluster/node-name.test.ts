/**
 * The node's name through a move, on the real API with the models of what is keyed by it: the
 * static-pod operators and etcd's per-node revision (models/static-pod-operators.ts), TopoLVM's node
 * finalizer (models/topolvm.ts), the OVN control plane bound to its Node (models/ovn-control-plane.ts)
 * and the machine-config controller (models/machine-config-controller.ts). The node's kubelet is the
 * test's: it registers the Node under the name kubelet would, and the models see it run there.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';
import {
  seedStaticPodOperators,
  startStaticPodOperators,
  type StaticPodOperatorsModel,
} from './models/static-pod-operators.js';
import { SELECTED_NODE, startTopolvm, TOPOLVM_FINALIZER, type TopolvmModel } from './models/topolvm.js';
import { NODE_SUBNETS, seedOvnControlPlane, startOvnControlPlane, type OvnModel } from './models/ovn-control-plane.js';
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

  /** the agent's run so far: the static hostname is the site's; kubelet registers under it */
  async function oldDesign(healthTimeoutSeconds: number) {
    const a = await agent(env, storeSite({ hostname: SITE_HOSTNAME }), undefined, undefined, { healthTimeoutSeconds });
    mkdirSync(path.join(a.root, 'etc'), { recursive: true });
    writeFileSync(path.join(a.root, 'etc/machine-id'), `${MACHINE_ID}\n`);
    writeFileSync(path.join(a.root, 'etc/hostname'), `${SITE_HOSTNAME}\n`);
    kubelet = SITE_HOSTNAME;
    await kubeletRegisters(core, SITE_HOSTNAME);
    return a;
  }

  it('old design: a new Node under the site hostname never gets Ready, so the former Node is never deleted', async () => {
    const a = await oldDesign(5);
    // OVN: its control plane stays on the former Node, so the new one never gets a subnet nor
    // becomes Ready, and the agent, waiting for Ready, never deletes the former Node
    await expect(a.run(['old-node'])).rejects.toThrow(
      `Node ${SITE_HOSTNAME} not Ready after 5s; the former Node is kept until it is`,
    );
    expect(await ovn.podNode()).toBe(FACTORY_NODE_NAME);
    const fresh = await core.readNode({ name: SITE_HOSTNAME });
    expect(fresh.metadata?.annotations?.[NODE_SUBNETS]).toBeUndefined();
    expect(fresh.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    // the machine-config controller is on the former Node too: the new one keeps the master taint
    expect(fresh.spec?.taints).toContainEqual({ key: MASTER_ROLE, effect: 'NoSchedule' });
    expect(fresh.metadata?.labels).not.toHaveProperty(WORKER_ROLE);
  });

  it('old design: once the former Node goes, LVMS claims are deleted, every static pod re-installs and etcd stops', async () => {
    await layLvms();
    const a = await oldDesign(30);
    // the OVN deadlock aside (a CNI that comes up): the new Node Ready, the former goes
    await ovn.stop();
    await core.patchNodeStatus({
      name: SITE_HOSTNAME,
      body: [
        {
          op: 'replace',
          path: '/status/conditions',
          value: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
        },
      ],
    });
    // the step deletes the former Node; its verification may still see it Terminating while the
    // finalizer runs, which is not what is looked at here
    await a.run(['old-node']).catch(() => undefined);
    await until('the claims deleted', async () => (topolvm.deletedClaims.length > 0 ? true : undefined));
    expect(topolvm.deletedClaims).toEqual([`${CLAIM.namespace}/${CLAIM.name}`]);
    expect((await core.readNamespacedPersistentVolumeClaim(CLAIM)).metadata?.deletionTimestamp).toBeDefined();
    // the operators land on the new Node: revision 7 installed for a name it does not know
    const stopped = await until('etcd to stop', async () => operators.etcdStopped);
    expect(stopped).toBe(
      `etcd-ensure-env-vars: NODE_STORE_0042_SNO_ETCD_URL_HOST: not set (revision ${REVISION} installed for ${SITE_HOSTNAME})`,
    );
    // and every other static pod re-installed for the new name: the operators' churn
    expect(operators.installs).toEqual(
      ['KubeAPIServer', 'KubeControllerManager', 'KubeScheduler', 'Etcd'].map(
        (kind) => `${kind} revision ${REVISION} on ${SITE_HOSTNAME}`,
      ),
    );
  });
});
