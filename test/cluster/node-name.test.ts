/**
 * The node's name through a move, on the real API with the models of what is keyed by it: the
 * static-pod operators and etcd's per-node revision (models/static-pod-operators.ts), TopoLVM's node
 * finalizer (models/topolvm.ts), the OVN control plane bound to its Node (models/ovn-control-plane.ts)
 * and the machine-config controller (models/machine-config-controller.ts). The former design (a new
 * Node under the site hostname, the former deleted once the new one is Ready) runs against them and
 * fails as the research says it does; the node keeping its name, the rename refused for each reason
 * the preflight names, and the rename's procedure (node-rename offline, node-identity online) pass.
 * The node's kubelet is the test's: it registers the Node under the name kubelet would, and the
 * models see it run there.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  CertificatesV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1Node,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Site } from '../../src/config/site.js';
import { KUBELET_ENV_FILE, SITE_HOSTNAME_ANNOTATION } from '../../src/node/node-name.js';
import { ETCD_CERTS_DIR, OFFLINE_CLEARED } from '../../src/node/rename.js';
import { renderRunState } from '../../src/cli/commands/status.js';
import {
  publishReport,
  REPORT_GROUP,
  REPORT_NAME,
  REPORT_PLURAL,
  REPORT_VERSION,
  reportStatus,
  type ReportStatus,
} from '../../src/hub/report.js';
import { FACTORY_RECORD } from '../../src/base/node-files.js';
import { type Clock, systemClock } from '../../src/ports/clock.js';
import { RENAME_WAIT_MINUTES } from '../../src/steps/node-rename.js';
import { CURRENT_CONFIG } from '../../src/node/rendered-config.js';
import { connectSystemdBus } from '../../src/ports/systemd-dbus.js';
import { startTestBus } from '../dbus/bus.js';
import { createCsr, kubeletCsrSpecs } from '../kube/csr-requests.js';
import { FACTORY_NODE_IP, FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { createSchemalessCrds } from '../kube/schemaless-crds.js';
import { type CriSandboxes, startCriSandboxes } from './cri-sandboxes.js';
import { agent, problems, STATE_DIR, startFactory, storeSite, type ClusterEnv } from './env.js';
import {
  envSafe,
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
/** an internal IP the factory prepared the node on, other than the site-config's */
const FACTORY_ADDRESS_ELSEWHERE = '192.168.127.99/24';

/** The system clock, except that a sleep returns at once and moves the clock on by its length. */
function skippingClock(): Clock {
  let skipped = 0;
  return {
    now: () => new Date(Date.now() + skipped),
    monotonic: () => performance.now() + skipped,
    sleep: async (ms) => {
      skipped += ms;
      await new Promise((r) => setImmediate(r));
    },
  };
}
const MACHINE_ID = '0f3c6a1e9b2d4c5f8a7e6d5c4b3a2910';
const SITE_HOSTNAME = 'store-0042-sno';
const REVISION = 7;
const LVMS_CLASS = 'lvms-vg1';
const CLAIM = { namespace: 'shop-app', name: 'orders-db' };
/** a label the site's tooling put on the Node */
const SITE_LABEL = 'store.example.com/aisle';

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
  let cri: CriSandboxes;
  beforeAll(async () => {
    bus = await startTestBus();
    process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
    cri = startCriSandboxes();
  });
  afterAll(() => {
    cri?.stop();
    return bus?.stop();
  });

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

  /** Ready, as kubelet reports it for its Node */
  const ready = async (name: string) =>
    (await core.readNode({ name })).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

  it('the former design fails against the models: no Ready, then etcd stopped, claims deleted, re-installs', async () => {
    // the design before node-name: kubelet registers a new Node under the site hostname, the agent
    // waits for it to be Ready, then deletes the former one
    await layLvms();
    await core.patchNode({
      name: FACTORY_NODE_NAME,
      body: [{ op: 'add', path: `/metadata/labels/${SITE_LABEL.replace('/', '~1')}`, value: '7' }],
    });
    kubelet = SITE_HOSTNAME;
    await kubeletRegisters(core, SITE_HOSTNAME);
    await settled();
    // OVN's control plane stays on the former Node: the new one gets no subnet, and waiting deadlocks
    expect(await ready(SITE_HOSTNAME)).toBe(false);
    expect(await ovn.podNode()).toBe(FACTORY_NODE_NAME);
    // what waiting never reaches, done anyway: the former Node deleted
    await core.deleteNode({ name: FACTORY_NODE_NAME });
    await until('etcd stopped', async () => operators.etcdStopped);
    expect(operators.etcdStopped).toBe(
      `etcd-ensure-env-vars: NODE_${envSafe(SITE_HOSTNAME)}_ETCD_URL_HOST: not set (revision ${REVISION} installed for ${SITE_HOSTNAME})`,
    );
    expect(operators.installs).toEqual(
      ['KubeAPIServer', 'KubeControllerManager', 'KubeScheduler', 'Etcd'].map(
        (k) => `${k} revision ${REVISION} on ${SITE_HOSTNAME}`,
      ),
    );
    await until('the claim deleted', async () => (topolvm.deletedClaims.length > 0 ? true : undefined));
    expect(topolvm.deletedClaims).toEqual([`${CLAIM.namespace}/${CLAIM.name}`]);
    expect((await core.readNode({ name: SITE_HOSTNAME })).metadata?.labels?.[SITE_LABEL]).toBeUndefined();
  });

  it('declines a rename at plan and at run, naming each reason; the move goes on under the factory name', async () => {
    await layLvms();
    await kc.makeApiClient(CustomObjectsApi).patchClusterCustomObjectStatus({
      group: 'operator.openshift.io',
      version: 'v1',
      plural: 'kubeschedulers',
      name: 'cluster',
      body: [{ op: 'add', path: '/status/nodeStatuses/0/targetRevision', value: REVISION + 1 }],
    });
    await layPerNodeConfigAndHealthCheck(kc, FACTORY_NODE_NAME);
    await masterPoolUpdated(false);
    const stale = await pendingRequest();
    // another node's request, which the agent leaves alone, holds nothing up
    await createCsr(kc, {
      ...kubeletCsrSpecs('store-scanner-3', '192.168.127.80', 'foreign').client,
      as: { user: 'store-technician', group: 'system:masters' },
    });
    const a = await factoryRoot({ nodeName: 'rename' });
    a.ctx.systemd = () => connectSystemdBus(a.ctx.log);
    await bus.services.configure({ root: a.root });
    const hostnameSource = `data:,${encodeURIComponent(`${FACTORY_NODE_NAME}\n`)}`;
    mkdirSync(path.join(a.root, 'etc/machine-config-daemon'), { recursive: true });
    writeFileSync(
      path.join(a.root, CURRENT_CONFIG),
      JSON.stringify({
        metadata: { name: 'rendered-master-1' },
        spec: { config: { storage: { files: [{ path: '/etc/hostname', contents: { source: hostnameSource } }] } } },
      }),
    );
    // the factory prepared the node on another address than the site-config's internal IP
    writeFactoryRecord(a.root, FACTORY_ADDRESS_ELSEWHERE);
    // the node up under its factory name, as at a site boot once the kubelet gate opened
    expect((await a.run(['node-name'])).result).toBe('succeeded');
    const reason = [
      `rename ${FACTORY_NODE_NAME} -> ${SITE_HOSTNAME} refused, the Node keeps the name ${FACTORY_NODE_NAME}: volumes are pinned to the node's name (LVMS, LSO): PersistentVolumeClaim ${CLAIM.namespace}/${CLAIM.name}`,
      `LVMS is installed (LVMCluster openshift-storage/lvmcluster, finalizer ${TOPOLVM_FINALIZER} on the Node): deleting the former Node deletes its claims`,
      'objects name the node or its hostname and would stop applying to it: PtpConfig openshift-ptp/grandmaster, NodeNetworkConfigurationPolicy vlan-100, LocalVolume openshift-local-storage/disks, SriovNetworkNodePolicy openshift-sriov-network-operator/fronthaul',
      'static-pod operators are mid-rollout: KubeScheduler/cluster',
      'machine-config pools are not Updated: MachineConfigPool master',
      `certificate signing requests are pending: ${stale}`,
      'a MachineHealthCheck covers the node: MachineHealthCheck openshift-machine-api/masters',
      '/etc/hostname is declared by the MachineConfig rendered-master-1: the site hostname would be drift',
      `the internal IP changes (${FACTORY_ADDRESS_ELSEWHERE} at the factory, ${FACTORY_NODE_IP}/24 at the site): etcd matches its member by address, so a rename waits for a move that keeps it; run again once nothing refuses`,
    ].join('; ');
    expect(await a.plan(['node-rename'])).toEqual([{ step: 'node-rename', action: 'declined', reason }]);
    // the run goes on: the reasons that last are not waited for, and node-identity runs after it
    const state = await a.run(['node-rename', 'node-identity']);
    expect(state).toMatchObject({
      result: 'succeeded',
      steps: { 'node-rename': { status: 'done', declined: reason }, 'node-identity': { status: 'done' } },
    });
    expect(renderRunState(state)).toContain(`Declined: node-rename: ${reason}`);
    expect(problems(a.logs).map((l) => l.msg)).toEqual([`declined, the run goes on: ${reason}`]);
    expect(kubeletName(a.root)).toBe(FACTORY_NODE_NAME);
    expect(existsSync(path.join(a.root, STATE_DIR, 'node-rename.json'))).toBe(false);
    expect((await bus.services.calls()).map((c) => c.member)).not.toContain('StopUnit');
    const node = await core.readNode({ name: FACTORY_NODE_NAME });
    expect(node.metadata?.annotations?.[SITE_HOSTNAME_ANNOTATION]).toBe(SITE_HOSTNAME);
    // the hub reads it from the cluster: the report's InService condition and its scalar for statusFeedback
    await publishReport(a.kube, a.ctx.clock, await reportStatus({ ...a.ctx, stateDir: STATE_DIR }, state));
    const report = (await kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({
      group: REPORT_GROUP,
      version: REPORT_VERSION,
      plural: REPORT_PLURAL,
      name: REPORT_NAME,
    })) as { status: ReportStatus };
    expect(report.status.declined).toBe(`node-rename: ${reason}`);
    expect(report.status.conditions).toEqual([
      {
        type: 'InService',
        status: 'True',
        reason: 'MovedWithDeclined',
        message: `site store-0042 is configured; declined: node-rename: ${reason}`,
        lastTransitionTime: state.finishedAt,
      },
    ]);
    await settled();
    expect(topolvm.deletedClaims).toEqual([]);
    expect((await core.listNode()).items.map((n) => n.metadata!.name)).toEqual([FACTORY_NODE_NAME]);
  });

  /** a node asked to rename, up under its factory name as at a site boot once the kubelet gate opened */
  async function upUnderFactoryName() {
    const a = await factoryRoot({ nodeName: 'rename' });
    a.ctx.systemd = () => connectSystemdBus(a.ctx.log);
    await bus.services.configure({ root: a.root });
    expect((await a.run(['node-name'])).result).toBe('succeeded');
    await hostnameAndKubelet(a.root);
    return a;
  }

  /** the master pool's Updated condition, as the machine-config controller sets it */
  async function masterPoolUpdated(updated: boolean) {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const pool = (await custom.getClusterCustomObject({
      group: 'machineconfiguration.openshift.io',
      version: 'v1',
      plural: 'machineconfigpools',
      name: 'master',
    })) as { status: { conditions: { type: string; status: string }[] } };
    const at = pool.status.conditions.findIndex((c) => c.type === 'Updated');
    await custom.patchClusterCustomObjectStatus({
      group: 'machineconfiguration.openshift.io',
      version: 'v1',
      plural: 'machineconfigpools',
      name: 'master',
      body: [{ op: 'replace', path: `/status/conditions/${at}/status`, value: updated ? 'True' : 'False' }],
    });
  }

  /** a certificate request naming the node, neither approved nor denied */
  const pendingRequest = () =>
    createCsr(kc, {
      ...kubeletCsrSpecs(FACTORY_NODE_NAME, FACTORY_NODE_IP, 'pending').client,
      as: { user: 'store-technician', group: 'system:masters' },
    });

  /** the record factory prepare leaves on the node, with its internal IP */
  function writeFactoryRecord(root: string, internalIP: string) {
    mkdirSync(path.join(root, path.dirname(FACTORY_RECORD)), { recursive: true });
    writeFileSync(
      path.join(root, FACTORY_RECORD),
      JSON.stringify({
        version: 1,
        node: FACTORY_NODE_NAME,
        installAddress: internalIP,
        installSubnet: '192.168.127.0/24',
        internalIP,
        preparedAt: '2026-01-05T08:00:00.000Z',
      }),
    );
  }

  /**
   * The test's kubelet restarted under the new name: with its certificate of the former name it asks
   * for the new client certificate as the former node, then, once signed, for a serving one as the
   * new node, and registers the new Node.
   */
  async function kubeletRestartsAs(root: string, from: string, to: string) {
    // as on OpenShift, the nodes may send requests (the factory seed without its CSRs has no binding)
    await kc.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: 'system:nodes-send-csrs' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node-bootstrapper' },
        subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:nodes' }],
      },
    });
    await until('kubelet-env naming the new name', async () => (kubeletName(root) === to ? true : undefined), 60_000);
    const { client, serving } = kubeletCsrSpecs(to, FACTORY_NODE_IP, 'renamed');
    const approved = (name: string) => async () =>
      (await kc.makeApiClient(CertificatesV1Api).readCertificateSigningRequest({ name })).status?.conditions?.some(
        (c) => c.type === 'Approved',
      ) || undefined;
    await createCsr(kc, { ...client, as: { user: `system:node:${from}`, group: 'system:nodes' } });
    await until('the client request approved', approved(client.name), 60_000);
    await createCsr(kc, serving);
    await until('the serving request approved', approved(serving.name), 60_000);
    kubelet = to;
    await kubeletRegisters(core, to);
  }

  it('a rename cut once kubelet-env names the new name resumes: csr-approval and node-identity finish it', async () => {
    const a = await factoryRoot({ nodeName: 'rename' });
    a.ctx.systemd = () => connectSystemdBus(a.ctx.log);
    // kubelet's start fails, as a power cut would leave it: after the files changed, before the new Node
    await bus.services.configure({ root: a.root, units: { 'kubelet.service': { startResult: 'failed' } } });
    expect((await a.run(['node-name'])).result).toBe('succeeded');
    await hostnameAndKubelet(a.root);
    await expect(a.run(['node-rename'])).rejects.toThrow(/start job of kubelet.service ended failed/);
    expect(kubeletName(a.root)).toBe(SITE_HOSTNAME);
    expect((await core.listNode()).items.map((n) => n.metadata!.name)).toEqual([FACTORY_NODE_NAME]);

    // the next boot: kubelet starts under the name kubelet-env holds, and the run resumes
    await bus.services.configure({ root: a.root });
    const [state] = await Promise.all([
      a.run(['node-name', 'csr-approval', 'node-rename', 'node-identity']),
      kubeletRestartsAs(a.root, FACTORY_NODE_NAME, SITE_HOSTNAME),
    ]);
    expect(state.result).toBe('succeeded');
    expect(state.steps['node-rename']).toMatchObject({ status: 'done', message: `the Node is named ${SITE_HOSTNAME}` });
    await until('the new Node Ready', async () => ((await ready(SITE_HOSTNAME)) ? true : undefined));
    await until('etcd on its new revision', async () => (operators.installs.length > 0 ? true : undefined));
    await settled();
    expect(operators.etcdStopped).toBeUndefined();
    expect(operators.installs).toEqual([`Etcd revision ${REVISION + 1} on ${SITE_HOSTNAME}`]);
    expect((await core.listNode()).items.map((n) => n.metadata!.name)).toEqual([SITE_HOSTNAME]);
  });

  it('renames where nothing refuses: one etcd revision for the new name, nothing else re-installed', async () => {
    await seedEtcdSecrets(core, FACTORY_NODE_NAME);
    await core.patchNode({
      name: FACTORY_NODE_NAME,
      body: [{ op: 'add', path: `/metadata/labels/${SITE_LABEL.replace('/', '~1')}`, value: '7' }],
    });
    const a = await factoryRoot({ nodeName: 'rename' });
    a.ctx.systemd = () => connectSystemdBus(a.ctx.log);
    await bus.services.configure({ root: a.root });
    const certs = path.join(a.root, ETCD_CERTS_DIR);
    mkdirSync(certs, { recursive: true });
    writeFileSync(path.join(certs, `etcd-peer-${FACTORY_NODE_NAME}.crt`), 'peer certificate');
    for (const f of OFFLINE_CLEARED) {
      mkdirSync(path.dirname(path.join(a.root, f)), { recursive: true });
      writeFileSync(path.join(a.root, f), `${FACTORY_NODE_NAME}`);
    }
    // ovnkube-node and multus as CRI-O runs them, on after kubelet stops: one writes OVN's databases
    // by path (a write after their deletion would make them again), one holds its certificate open
    const [nb, sb, , multusCerts] = OFFLINE_CLEARED.map((f) => path.join(a.root, f));
    const ovnkube = cri.run('ovnkube-node', 'while :; do echo x >> "$1"; echo x >> "$2"; sleep 0.05; done', [nb!, sb!]);
    const multus = cri.run('multus', 'exec 3>>"$1"; while :; do echo x >&3; sleep 0.05; done', [multusCerts!]);

    // the node up under its factory name first, as without a rename
    expect((await a.run(['node-name'])).result).toBe('succeeded');
    await hostnameAndKubelet(a.root);
    expect(kubelet).toBe(FACTORY_NODE_NAME);
    const [state] = await Promise.all([
      a.run(['node-rename']),
      kubeletRestartsAs(a.root, FACTORY_NODE_NAME, SITE_HOSTNAME),
    ]);
    expect(state.result).toBe('succeeded');
    expect(readFileSync(path.join(certs, `etcd-peer-${SITE_HOSTNAME}.crt`), 'utf8')).toBe('peer certificate');
    expect(OFFLINE_CLEARED.filter((f) => existsSync(path.join(a.root, f)))).toEqual([]);
    // the sandboxes stopped and removed through crictl before the files went: nothing wrote after
    expect(cri.listed()).toEqual([]);
    for (const p of [ovnkube, multus]) expect(p.exitCode ?? p.signalCode).not.toBeNull();
    // kubelet stopped before the files changed, started after kubelet-env named the new name
    expect(
      (await bus.services.calls()).filter((c) => c.args[0] === 'kubelet.service' && c.member.endsWith('Unit')),
    ).toEqual([
      { member: 'StopUnit', args: ['kubelet.service', 'replace'] },
      { member: 'StartUnit', args: ['kubelet.service', 'replace'] },
    ]);
    // the new Node is not Ready (OVN's control plane is still on the former): node-identity does not wait for it
    expect(await ready(SITE_HOSTNAME)).toBe(false);
    expect((await a.run(['node-identity'])).result).toBe('succeeded');

    await until('the new Node Ready', async () => ((await ready(SITE_HOSTNAME)) ? true : undefined));
    await until('etcd on its new revision', async () => (operators.installs.length > 0 ? true : undefined));
    await settled();
    expect(operators.etcdStopped).toBeUndefined();
    expect(operators.installs).toEqual([`Etcd revision ${REVISION + 1} on ${SITE_HOSTNAME}`]);
    expect((await core.listNode()).items.map((n) => n.metadata!.name)).toEqual([SITE_HOSTNAME]);
    const node = await core.readNode({ name: SITE_HOSTNAME });
    expect(node.metadata?.labels?.[SITE_LABEL]).toBe('7');
    expect(node.metadata?.labels?.[WORKER_ROLE]).toBe('');
    expect(node.spec?.taints ?? []).not.toContainEqual({ key: MASTER_ROLE, effect: 'NoSchedule' });
    expect(node.metadata?.annotations?.[SITE_HOSTNAME_ANNOTATION]).toBe(SITE_HOSTNAME);
    expect(await ovn.podNode()).toBe(SITE_HOSTNAME);
    const all = await core.readNamespacedSecret({ namespace: ETCD_NAMESPACE, name: 'etcd-all-certs' });
    expect(Object.keys(all.data ?? {}).sort()).toEqual(
      [FACTORY_NODE_NAME, SITE_HOSTNAME].flatMap((n) => [`etcd-peer-${n}.crt`, `etcd-peer-${n}.key`]),
    );
    expect((await a.plan(['node-name', 'node-rename', 'node-identity'])).map((p) => p.action)).toEqual([
      'noop',
      'noop',
      'noop',
    ]);
  });

  it('waits out a rollout, an updating pool and a pending request, then renames', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const scheduler = { group: 'operator.openshift.io', version: 'v1', plural: 'kubeschedulers', name: 'cluster' };
    await custom.patchClusterCustomObjectStatus({
      ...scheduler,
      body: [{ op: 'add', path: '/status/nodeStatuses/0/targetRevision', value: REVISION + 1 }],
    });
    await masterPoolUpdated(false);
    const stale = await pendingRequest();
    const a = await upUnderFactoryName();
    const waiting = `rename ${FACTORY_NODE_NAME} -> ${SITE_HOSTNAME} waits up to ${RENAME_WAIT_MINUTES} min for: static-pod operators are mid-rollout: KubeScheduler/cluster; machine-config pools are not Updated: MachineConfigPool master; certificate signing requests are pending: ${stale}`;
    const [state] = await Promise.all([
      a.run(['node-rename']),
      (async () => {
        await until('the rename waiting', async () => (a.logs.some((l) => l.includes(waiting)) ? true : undefined));
        // the agent has changed nothing while it waits
        expect(kubeletName(a.root)).toBe(FACTORY_NODE_NAME);
        // the rollout ends, the pool updates, the request is answered: as they do by themselves
        await custom.patchClusterCustomObjectStatus({
          ...scheduler,
          body: [
            { op: 'remove', path: '/status/nodeStatuses/0/targetRevision' },
            { op: 'replace', path: '/status/latestAvailableRevision', value: REVISION },
          ],
        });
        await masterPoolUpdated(true);
        await kc.makeApiClient(CertificatesV1Api).deleteCertificateSigningRequest({ name: stale });
        await kubeletRestartsAs(a.root, FACTORY_NODE_NAME, SITE_HOSTNAME);
      })(),
    ]);
    expect(state.result).toBe('succeeded');
    expect(state.steps['node-rename']).not.toHaveProperty('declined');
    expect(kubeletName(a.root)).toBe(SITE_HOSTNAME);
  });

  it('a request still pending after the bound declines; the rerun renames once it is gone', async () => {
    const stale = await pendingRequest();
    const a = await upUnderFactoryName();
    // the bound passes on the agent's own clock, which this clock runs through without sleeping
    a.ctx.clock = skippingClock();
    const first = await a.run(['node-rename', 'node-identity']);
    expect(first.result).toBe('succeeded');
    expect(first.steps['node-rename']?.declined).toBe(
      `rename ${FACTORY_NODE_NAME} -> ${SITE_HOSTNAME} refused, the Node keeps the name ${FACTORY_NODE_NAME}: certificate signing requests are pending: ${stale} (still so after ${RENAME_WAIT_MINUTES} min of waiting); run again once nothing refuses`,
    );
    expect(kubeletName(a.root)).toBe(FACTORY_NODE_NAME);
    expect((await core.listNode()).items.map((n) => n.metadata!.name)).toEqual([FACTORY_NODE_NAME]);

    // the same stick again, the request gone: the rename is planned again and done
    a.ctx.clock = systemClock;
    await kc.makeApiClient(CertificatesV1Api).deleteCertificateSigningRequest({ name: stale });
    const [again] = await Promise.all([
      a.run(['node-rename', 'node-identity']),
      kubeletRestartsAs(a.root, FACTORY_NODE_NAME, SITE_HOSTNAME),
    ]);
    expect(again.result).toBe('succeeded');
    expect(again.steps['node-rename']).not.toHaveProperty('declined');
    expect(renderRunState(again)).not.toContain('Declined:');
    expect((await core.listNode()).items.map((n) => n.metadata!.name)).toEqual([SITE_HOSTNAME]);
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

/**
 * Per-node configuration as the operators' own resources name one node, and a MachineHealthCheck
 * covering the master's Machine. Their CRDs here keep only the group, kind and scope of upstream's
 * (their schemas are not what is tested: the preflight reads the objects as they come):
 * - ptp-operator api/v1/ptpconfig_types.go: spec.recommend[].match[].nodeName;
 * - kubernetes-nmstate api/v1/nodenetworkconfigurationpolicy_types.go: spec.nodeSelector;
 * - local-storage-operator api/v1/localvolume_types.go: spec.nodeSelector.nodeSelectorTerms;
 * - sriov-network-operator api/v1/sriovnetworknodepolicy_types.go: spec.nodeSelector;
 * - machine-api MachineHealthCheck (openshift/api machine/v1beta1/types_machinehealthcheck.go):
 *   spec.selector over the Machines' labels, a Machine's status.nodeRef naming its Node;
 * - lvm-operator api/v1alpha1/lvmcluster_types.go: LVMCluster, namespaced.
 */
async function layPerNodeConfigAndHealthCheck(kc: KubeConfig, node: string) {
  const kinds = [
    { group: 'ptp.openshift.io', version: 'v1', kind: 'PtpConfig', plural: 'ptpconfigs', namespaced: true },
    {
      group: 'nmstate.io',
      version: 'v1',
      kind: 'NodeNetworkConfigurationPolicy',
      plural: 'nodenetworkconfigurationpolicies',
      namespaced: false,
    },
    {
      group: 'local.storage.openshift.io',
      version: 'v1',
      kind: 'LocalVolume',
      plural: 'localvolumes',
      namespaced: true,
    },
    {
      group: 'sriovnetwork.openshift.io',
      version: 'v1',
      kind: 'SriovNetworkNodePolicy',
      plural: 'sriovnetworknodepolicies',
      namespaced: true,
    },
    { group: 'machine.openshift.io', version: 'v1beta1', kind: 'Machine', plural: 'machines', namespaced: true },
    {
      group: 'machine.openshift.io',
      version: 'v1beta1',
      kind: 'MachineHealthCheck',
      plural: 'machinehealthchecks',
      namespaced: true,
    },
    { group: 'lvm.topolvm.io', version: 'v1alpha1', kind: 'LVMCluster', plural: 'lvmclusters', namespaced: true },
  ];
  await createSchemalessCrds(kc, kinds);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const hostnameSelector = { 'kubernetes.io/hostname': node };
  const objects: { kind: string; namespace?: string; name: string; body: Record<string, unknown> }[] = [
    {
      kind: 'PtpConfig',
      namespace: 'openshift-ptp',
      name: 'grandmaster',
      body: {
        spec: { profile: [{ name: 'gm' }], recommend: [{ profile: 'gm', priority: 4, match: [{ nodeName: node }] }] },
      },
    },
    {
      kind: 'NodeNetworkConfigurationPolicy',
      name: 'vlan-100',
      body: { spec: { nodeSelector: hostnameSelector, desiredState: {} } },
    },
    {
      kind: 'LocalVolume',
      namespace: 'openshift-local-storage',
      name: 'disks',
      body: {
        spec: {
          nodeSelector: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] },
            ],
          },
        },
      },
    },
    {
      kind: 'SriovNetworkNodePolicy',
      namespace: 'openshift-sriov-network-operator',
      name: 'fronthaul',
      body: { spec: { nodeSelector: hostnameSelector, numVfs: 8, resourceName: 'fronthaul' } },
    },
    {
      kind: 'Machine',
      namespace: 'openshift-machine-api',
      name: 'sno-master-0',
      body: {
        metadata: { labels: { 'machine.openshift.io/cluster-api-machine-role': 'master' } },
        status: { nodeRef: { kind: 'Node', name: node } },
      },
    },
    {
      kind: 'MachineHealthCheck',
      namespace: 'openshift-machine-api',
      name: 'masters',
      body: { spec: { selector: { matchLabels: { 'machine.openshift.io/cluster-api-machine-role': 'master' } } } },
    },
    { kind: 'LVMCluster', namespace: 'openshift-storage', name: 'lvmcluster', body: { spec: {} } },
  ];
  for (const o of objects) {
    const k = kinds.find((x) => x.kind === o.kind)!;
    const extra = o.body.metadata as Record<string, unknown> | undefined;
    const body = {
      ...o.body,
      apiVersion: `${k.group}/${k.version}`,
      kind: k.kind,
      metadata: { name: o.name, ...(o.namespace && { namespace: o.namespace }), ...extra },
    };
    if (o.namespace) {
      await core.createNamespace({ body: { metadata: { name: o.namespace } } }).catch(() => undefined);
      // a just-made CRD is served moments after it is established
      await until(`${k.kind} served`, () =>
        custom
          .createNamespacedCustomObject({
            group: k.group,
            version: k.version,
            namespace: o.namespace!,
            plural: k.plural,
            body,
          })
          .then(() => true)
          .catch(() => undefined),
      );
    } else
      await until(`${k.kind} served`, () =>
        custom
          .createClusterCustomObject({ group: k.group, version: k.version, plural: k.plural, body })
          .then(() => true)
          .catch(() => undefined),
      );
  }
}
