/**
 * library-go's static-pod operator controllers on a single node, for the four operators whose
 * status.nodeStatuses are keyed by node name: etcd, kube-apiserver, kube-controller-manager and
 * kube-scheduler (openshift/library-go @ release-4.16 c6fca0a92a; the same logic at release-4.14
 * 840298df1e and release-4.18 0c0d954931):
 *
 * - NodeController (pkg/operator/staticpod/controller/node/node_controller.go:47-86, 117-125): the
 *   master Nodes are those labelled node-role.kubernetes.io/master; the status of a Node that no
 *   longer exists is dropped and every master Node without one is appended with all revisions 0,
 *   in one status update.
 * - InstallerController (pkg/operator/staticpod/controller/installer/installer_controller.go:812-818,
 *   836-846): a node whose currentRevision is not latestAvailableRevision gets targetRevision =
 *   latest and an installer pod `installer-<rev>-<node>`; the installer lays out that revision's pod
 *   for that node, NODE_NAME and NODE_ENVVAR_NAME replaced by its name
 *   (pkg/operator/staticpod/installerpod/cmd.go:384-404), and currentRevision becomes the target.
 *
 * and, for etcd, the cluster-etcd-operator (openshift/cluster-etcd-operator @ release-4.16
 * d9e83020b9eb; the same in release-4.14 8892946e2c and release-4.18 3af8b9d6ce):
 *
 * - EnvVarController: NODE_<envsafe(node)>_{IP,ETCD_URL_HOST,ETCD_NAME} for each node of
 *   nodeStatuses (pkg/etcdenvvar/etcd_env.go:147-214); a change of them re-renders etcd-pod and the
 *   revision controller cuts a new revision, whose copy `etcd-pod-<rev>` carries them
 *   (envvarcontroller.go:150-186, targetconfigcontroller.go:89-104);
 * - the static pod's init container etcd-ensure-env-vars expands
 *   `${NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST?not set}` (bindata/etcd/pod.yaml:45-49): installed for a
 *   node the revision does not know, it fails, etcd stops and the API with it; on a single node
 *   nothing is left to cut the next revision.
 *
 * The operators are pods (one per operator namespace, here one for the four): they run only while a
 * kubelet runs the Node they are bound to (pinned-pod.ts), so after a new Node registered they act
 * only once the former Node is deleted.
 *
 * Each pass runs the node controller, then the installer, then the revision controller. Upstream
 * they are separate controllers; the installer acting before the env-var and revision controllers
 * have caught up is the window the research describes (an operator cold start on its new Node
 * against the installer's 30 s settle, installerpod/cmd.go:453-541), taken as it falls worst.
 */
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { isNotFound, startLoop, type Gvr, type Model } from './loop.js';
import { pinnedPod, seedPinnedPod } from './pinned-pod.js';

export const STATIC_POD_OPERATORS: readonly { kind: string; plural: string }[] = [
  { kind: 'KubeAPIServer', plural: 'kubeapiservers' },
  { kind: 'KubeControllerManager', plural: 'kubecontrollermanagers' },
  { kind: 'KubeScheduler', plural: 'kubeschedulers' },
  { kind: 'Etcd', plural: 'etcds' },
];
export const ETCD_NAMESPACE = 'openshift-etcd';
const OPERATOR_NAMESPACE = 'openshift-etcd-operator';
const OPERATOR_POD = 'static-pod-operators-0';
const MASTER_LABEL = 'node-role.kubernetes.io/master';

interface NodeStatus {
  nodeName: string;
  currentRevision?: number;
  targetRevision?: number;
}
interface OperatorStatus {
  latestAvailableRevision?: number;
  nodeStatuses?: NodeStatus[];
}

/** etcd_env.go envVarSafe: the node name as it appears in an environment variable's name */
export const envSafe = (node: string): string => node.replace(/[-.]/g, '_').toUpperCase();

export interface StaticPodOperatorsModel extends Model {
  /** every installer that ran: `<Kind> revision <n> on <node>` */
  installs: string[];
  /** why etcd stopped for good, once it did */
  etcdStopped?: string;
}

const gvr = (plural: string): Gvr => ({ group: 'operator.openshift.io', version: 'v1', plural });

/** The operators' resources and etcd's revision as a factory install leaves them: `node` at `revision`. */
export async function seedStaticPodOperators(kc: KubeConfig, node: string, revision: number): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: ETCD_NAMESPACE } } }).catch(() => undefined);
  await writeEtcdRevision(core, revision, [node]);
  await seedPinnedPod(core, OPERATOR_NAMESPACE, OPERATOR_POD, node);
  for (const { kind, plural } of STATIC_POD_OPERATORS) {
    const existing = await custom.getClusterCustomObject({ ...gvr(plural), name: 'cluster' }).catch(() => undefined);
    if (!existing)
      await custom.createClusterCustomObject({
        ...gvr(plural),
        body: { apiVersion: 'operator.openshift.io/v1', kind, metadata: { name: 'cluster' }, spec: {} },
      });
    await custom.patchClusterCustomObjectStatus({
      ...gvr(plural),
      name: 'cluster',
      body: [
        {
          op: 'add',
          path: '/status',
          value: { latestAvailableRevision: revision, nodeStatuses: [{ nodeName: node, currentRevision: revision }] },
        },
      ],
    });
  }
}

/** etcd-pod-<rev>: the revision's copy of etcd-pod, with the env of the nodes it was rendered for */
async function writeEtcdRevision(core: CoreV1Api, revision: number, nodes: string[]): Promise<void> {
  const env: Record<string, string> = {};
  for (const n of nodes) {
    env[`NODE_${envSafe(n)}_ETCD_NAME`] = n;
    env[`NODE_${envSafe(n)}_ETCD_URL_HOST`] = '192.168.127.10';
    env[`NODE_${envSafe(n)}_IP`] = '192.168.127.10';
  }
  await core.createNamespacedConfigMap({
    namespace: ETCD_NAMESPACE,
    body: { metadata: { name: `etcd-pod-${revision}`, namespace: ETCD_NAMESPACE }, data: env },
  });
}

export function startStaticPodOperators(
  kc: KubeConfig,
  kubeletName: () => string,
  intervalMs = 200,
): StaticPodOperatorsModel {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const pod = pinnedPod(core, OPERATOR_NAMESPACE, OPERATOR_POD, kubeletName);
  const installs: string[] = [];
  const etcd: { stopped?: string } = {};

  const writeStatus = (plural: string, status: OperatorStatus) =>
    custom.patchClusterCustomObjectStatus({
      ...gvr(plural),
      name: 'cluster',
      body: [{ op: 'replace', path: '/status', value: status }],
    });

  async function revisionEnv(revision: number): Promise<Record<string, string>> {
    try {
      return (
        (await core.readNamespacedConfigMap({ namespace: ETCD_NAMESPACE, name: `etcd-pod-${revision}` })).data ?? {}
      );
    } catch (e) {
      if (isNotFound(e)) return {};
      throw e;
    }
  }

  async function reconcile(): Promise<void> {
    if (etcd.stopped) return; // the API is gone with etcd; nothing here runs any more
    const nodes = await pod.nodesIfRuns();
    if (!nodes) return;
    const masters = nodes.filter((n) => MASTER_LABEL in (n.metadata!.labels ?? {})).map((n) => n.metadata!.name!);
    for (const { kind, plural } of STATIC_POD_OPERATORS) {
      const o = (await custom.getClusterCustomObject({ ...gvr(plural), name: 'cluster' })) as {
        status?: OperatorStatus;
      };
      const status: OperatorStatus = structuredClone(o.status ?? {});
      const latest = status.latestAvailableRevision ?? 0;
      // NodeController: statuses follow the master Nodes, a new one at revision 0
      const kept = (status.nodeStatuses ?? []).filter((s) => masters.includes(s.nodeName));
      for (const m of masters) if (!kept.some((s) => s.nodeName === m)) kept.push({ nodeName: m, currentRevision: 0 });
      status.nodeStatuses = kept;
      // InstallerController: a node behind the latest revision gets it installed
      for (const s of kept) {
        if (s.currentRevision === latest) continue;
        s.targetRevision = latest;
        installs.push(`${kind} revision ${latest} on ${s.nodeName}`);
        if (kind === 'Etcd') {
          const env = await revisionEnv(latest);
          const wanted = `NODE_${envSafe(s.nodeName)}_ETCD_URL_HOST`;
          if (env[wanted] === undefined) {
            etcd.stopped = `etcd-ensure-env-vars: ${wanted}: not set (revision ${latest} installed for ${s.nodeName})`;
            await writeStatus(plural, status);
            return;
          }
        }
        s.currentRevision = latest;
        delete s.targetRevision;
      }
      // etcd's env-var and revision controllers: a new revision when the nodes changed
      if (kind === 'Etcd') {
        const env = await revisionEnv(latest);
        const known = kept.every((s) => env[`NODE_${envSafe(s.nodeName)}_ETCD_URL_HOST`] !== undefined);
        if (!known) {
          await writeEtcdRevision(
            core,
            latest + 1,
            kept.map((s) => s.nodeName),
          );
          status.latestAvailableRevision = latest + 1;
        }
      }
      if (JSON.stringify(status) !== JSON.stringify(o.status ?? {})) await writeStatus(plural, status);
    }
  }

  const model = Object.assign(startLoop('static-pod-operators', intervalMs, reconcile), { installs });
  return Object.defineProperty(model, 'etcdStopped', { get: () => etcd.stopped }) as StaticPodOperatorsModel;
}
