/**
 * Whether renaming this single node's Kubernetes Node can break something that is keyed by its
 * name. The reasons to refuse, each read from what the components do upstream:
 *
 * - a PersistentVolume with node affinity, or a claim bound to one on this node: a PV's
 *   nodeAffinity is immutable (k8s validation, 4.14-4.18), TopoLVM's pins `topology.topolvm.io/node`
 *   and the Local Storage Operator's `kubernetes.io/hostname` to the old name, so the claims never
 *   schedule again (and the LSO diskmaker creates a second PV for the same disk);
 * - LVMS installed: its vgmanager puts the finalizer `topolvm.io/node` on the Node, and TopoLVM's
 *   node controller, on the Node's deletion, deletes every LVMS claim of that node
 *   (topolvm internal/controller/node_controller.go; test/cluster/models/topolvm.ts);
 * - any object whose spec names the node or its hostname (PtpConfig match.nodeName, NNCP,
 *   LocalVolume and SR-IOV policy node selectors, a custom MachineConfigPool, a Tuned profile's
 *   `kubernetes.io/hostname` match, a PerformanceProfile or KubeletConfig selecting the node by
 *   hostname, a Deployment pinned by nodeName): it silently stops applying to the renamed node.
 *   The known kinds are read first; then every other kind the API serves is listed and searched the
 *   same way, so an operator the agent has never heard of is caught too;
 * - a static-pod operator mid-rollout (a node with a target revision, or not at the latest one, or
 *   the kube-apiserver's startup monitor present): renaming its nodeStatuses then starts an
 *   installer for the new name on a revision that does not know it, which stops etcd for good
 *   (test/cluster/models/etcd-operator.ts);
 * - a MachineHealthCheck covering the node's Machine: it would remediate the node while it is
 *   NotReady under its new name;
 * - /etc/hostname declared by a MachineConfig: the machine-config daemon reports the site's
 *   hostname as drift;
 * - a machine-config pool not Updated: the daemon is rolling out a rendered config (a reboot may
 *   come) and the controller that moves the master taint and worker label is busy with it;
 * - a certificate signing request of this node pending (filed by it or naming it; another
 *   node's, which the agent leaves alone, does not count): the approval of kubelet's requests for the new name
 *   must be the only one in flight (research section 4, preflight);
 * - the internal IP changed from the factory's: etcd's discovery matches its member by peer URL, an
 *   address, and the rename's etcd procedure assumes that address kept (research section 3, etcd
 *   member controllers).
 *
 * Three of them pass by themselves: a rollout, a pool updating, a request pending. They are
 * transient: a run waits for them, bounded, before they count (src/steps/node-rename.ts).
 */
import type { DeclaredFiles } from './rendered-config.js';
import { HOSTNAME_FILE } from './hostname.js';
import type { Kube, KubeObject } from '../ports/kube.js';
import { csrState, type CsrObject, parseCertificateRequest, requestedNode } from '../kube/csr.js';

/** The static-pod operators of library-go whose status.nodeStatuses are keyed by node name. */
export const STATIC_POD_OPERATORS = ['Etcd', 'KubeAPIServer', 'KubeControllerManager', 'KubeScheduler'] as const;
export const OPERATOR_API = 'operator.openshift.io/v1';
/** the kube-apiserver's startup monitor, a static pod while a revision is being proven */
export const STARTUP_MONITOR_MANIFEST = '/etc/kubernetes/manifests/kube-apiserver-startup-monitor-pod.yaml';
export const TOPOLVM_FINALIZER = 'topolvm.io/node';

/** Kinds whose objects configure one node by its name or hostname (a string equal to it, anywhere in spec). */
export const PER_NODE_KINDS: readonly { apiVersion: string; kind: string }[] = [
  { apiVersion: 'ptp.openshift.io/v1', kind: 'PtpConfig' },
  { apiVersion: 'nmstate.io/v1', kind: 'NodeNetworkConfigurationPolicy' },
  { apiVersion: 'local.storage.openshift.io/v1', kind: 'LocalVolume' },
  { apiVersion: 'local.storage.openshift.io/v1alpha1', kind: 'LocalVolumeSet' },
  { apiVersion: 'sriovnetwork.openshift.io/v1', kind: 'SriovNetworkNodePolicy' },
  { apiVersion: 'machineconfiguration.openshift.io/v1', kind: 'MachineConfigPool' },
];

/**
 * Kinds the scan of every other kind leaves out: Kubernetes keeps one per node and makes it again
 * under the new name (a Pod's spec.nodeName, kubelet's Lease and CSINode, a VolumeAttachment of
 * the attach/detach controller), or the preflight judges them on its own terms above
 * (PersistentVolume, CertificateSigningRequest), or they are the Node itself. Keyed group/Kind.
 */
const REMADE_PER_NODE: ReadonlySet<string> = new Set([
  '/Node',
  '/Pod',
  '/PersistentVolume',
  '/Event',
  'events.k8s.io/Event',
  'coordination.k8s.io/Lease',
  'storage.k8s.io/CSINode',
  'storage.k8s.io/VolumeAttachment',
  'certificates.k8s.io/CertificateSigningRequest',
]);

const groupKind = (apiVersion: string, kind: string) =>
  `${apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : ''}/${kind}`;

export interface NodeStatus {
  nodeName: string;
  currentRevision?: number;
  targetRevision?: number;
}

export interface StaticPodOperator {
  kind: string;
  latestAvailableRevision?: number;
  nodeStatuses: NodeStatus[];
}

/** What the preflight read of the cluster. */
export interface ClusterFacts {
  /** PVs with node affinity; claims bound on this node (`namespace/name`) */
  pinnedVolumes: string[];
  nodeFinalizers: string[];
  /** `Kind name` of every LVMCluster */
  lvmClusters: string[];
  /** `Kind [namespace/]name` of every object whose spec names this node or its hostname */
  perNodeConfig: string[];
  operators: StaticPodOperator[];
  /** MachineHealthChecks whose selector matches this node's Machine */
  healthChecks: string[];
  /** `MachineConfigPool name` of every pool not Updated */
  updatingPools: string[];
  /** names of this node's certificate signing requests neither approved nor denied */
  pendingCsrs: string[];
}

/** What the preflight read of the node itself. */
export interface NodeFacts {
  declared?: DeclaredFiles;
  startupMonitor: boolean;
  /** the factory's internal IPs -> the site's, when the site moves them (from the factory record) */
  addressChange?: string;
}

/** One reason to refuse; a transient one passes by itself, and a run waits for it first. */
export interface Refusal {
  reason: string;
  transient: boolean;
}

const sel = (labels: Record<string, string> | undefined, want: Record<string, string> | undefined) =>
  Object.entries(want ?? {}).every(([k, v]) => labels?.[k] === v);

/** Whether any string in `value` equals one of `names`. */
function names(value: unknown, wanted: ReadonlySet<string>): boolean {
  if (typeof value === 'string') return wanted.has(value);
  if (Array.isArray(value)) return value.some((v) => names(v, wanted));
  if (value && typeof value === 'object') return Object.values(value).some((v) => names(v, wanted));
  return false;
}

type Pv = KubeObject & {
  spec?: { nodeAffinity?: unknown; claimRef?: { namespace?: string; name?: string } };
};
type Node = KubeObject & { metadata: KubeObject['metadata'] & { finalizers?: string[] } };
type Machine = KubeObject & { status?: { nodeRef?: { name?: string } } };
type HealthCheck = KubeObject & { spec?: { selector?: { matchLabels?: Record<string, string> } } };
type Pool = KubeObject & { status?: { conditions?: { type: string; status?: string }[] } };

async function listIfServed(kube: Kube, apiVersion: string, kind: string): Promise<KubeObject[]> {
  return (await kube.serves(apiVersion, kind)) ? kube.list(apiVersion, kind) : [];
}

/**
 * The group versions an aggregated API server serves (openshift-apiserver's, metrics, OLM's
 * packages): reading them waits on that server, which a site boot may not have up yet, so the scan
 * leaves them out (a DeploymentConfig pinned to the node goes unseen).
 */
async function aggregated(kube: Kube): Promise<Set<string>> {
  type ApiService = KubeObject & { spec?: { group?: string; version?: string; service?: unknown } };
  const services = await kube.list<ApiService>('apiregistration.k8s.io/v1', 'APIService');
  return new Set(
    services.filter((a) => a.spec?.service).map((a) => (a.spec?.group ? `${a.spec.group}/${a.spec.version}` : '')),
  );
}

/**
 * `Kind [namespace/]name` of every object whose spec names one of `wanted`: the known per-node
 * kinds first, then every other kind the API serves (those Kubernetes makes again per node left out).
 */
async function namingObjects(kube: Kube, wanted: ReadonlySet<string>): Promise<string[]> {
  const found: string[] = [];
  const search = (kind: string, objects: KubeObject[]) => {
    for (const obj of objects)
      if (names(obj.spec, wanted))
        found.push(`${kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`);
  };
  for (const { apiVersion, kind } of PER_NODE_KINDS) search(kind, await listIfServed(kube, apiVersion, kind));
  const known = new Set([...PER_NODE_KINDS.map((k) => groupKind(k.apiVersion, k.kind)), ...REMADE_PER_NODE]);
  for (const { apiVersion, kind } of await kube.kinds(await aggregated(kube)))
    if (!known.has(groupKind(apiVersion, kind))) search(kind, await kube.list(apiVersion, kind));
  return found;
}

/**
 * Whether a certificate request is this node's: filed by it, or naming it as kubelet does. Another
 * node's requests, which the agent leaves alone, do not hold a rename up.
 */
function concerns(csr: CsrObject, node: string): boolean {
  if (csr.spec.username === `system:node:${node}`) return true;
  try {
    return requestedNode(parseCertificateRequest(Buffer.from(csr.spec.request, 'base64').toString('utf8'))) === node;
  } catch {
    return false;
  }
}

/** Reads the cluster for the preflight; `node` is the Node's current name. */
export async function surveyCluster(kube: Kube, node: string): Promise<ClusterFacts> {
  const nodeObject = await kube.get<Node>({ apiVersion: 'v1', kind: 'Node', name: node });
  const hostnameLabel = nodeObject?.metadata.labels?.['kubernetes.io/hostname'] ?? node;
  const pvs = await kube.list<Pv>('v1', 'PersistentVolume');
  const claims = await kube.list('v1', 'PersistentVolumeClaim');
  const pinnedVolumes = [
    ...pvs.filter((pv) => pv.spec?.nodeAffinity !== undefined).map((pv) => `PersistentVolume ${pv.metadata.name}`),
    ...claims
      .filter((c) => c.metadata.annotations?.['volume.kubernetes.io/selected-node'] === node)
      .map((c) => `PersistentVolumeClaim ${c.metadata.namespace}/${c.metadata.name}`),
  ];
  const perNodeConfig = await namingObjects(kube, new Set([node, hostnameLabel]));
  const operators: StaticPodOperator[] = [];
  for (const kind of STATIC_POD_OPERATORS) {
    const o = await kube.get<KubeObject & { status?: Omit<StaticPodOperator, 'kind'> }>({
      apiVersion: OPERATOR_API,
      kind,
      name: 'cluster',
    });
    if (o)
      operators.push({
        kind,
        ...(o.status?.latestAvailableRevision !== undefined && {
          latestAvailableRevision: o.status.latestAvailableRevision,
        }),
        nodeStatuses: o.status?.nodeStatuses ?? [],
      });
  }
  const machines = (await listIfServed(kube, 'machine.openshift.io/v1beta1', 'Machine')) as Machine[];
  const mine = machines.filter((m) => m.status?.nodeRef?.name === node);
  const checks = (await listIfServed(kube, 'machine.openshift.io/v1beta1', 'MachineHealthCheck')) as HealthCheck[];
  const pools = (await listIfServed(kube, 'machineconfiguration.openshift.io/v1', 'MachineConfigPool')) as Pool[];
  const csrs = (await kube.list('certificates.k8s.io/v1', 'CertificateSigningRequest')) as unknown as (CsrObject &
    KubeObject)[];
  return {
    pinnedVolumes,
    nodeFinalizers: nodeObject?.metadata.finalizers ?? [],
    lvmClusters: (await listIfServed(kube, 'lvm.topolvm.io/v1alpha1', 'LVMCluster')).map(
      (l) => `LVMCluster ${l.metadata.namespace}/${l.metadata.name}`,
    ),
    perNodeConfig,
    operators,
    healthChecks: checks
      .filter((c) => mine.some((m) => sel(m.metadata.labels, c.spec?.selector?.matchLabels)))
      .map((c) => `MachineHealthCheck ${c.metadata.namespace}/${c.metadata.name}`),
    updatingPools: pools
      .filter((p) => p.status?.conditions?.find((c) => c.type === 'Updated')?.status !== 'True')
      .map((p) => `MachineConfigPool ${p.metadata.name}`),
    pendingCsrs: csrs.filter((c) => csrState(c) === 'pending' && concerns(c, node)).map((c) => c.metadata.name!),
  };
}

/** Every reason to refuse the rename, each naming what it found; empty when the rename is safe. */
export function renameRefusals(cluster: ClusterFacts, node: NodeFacts): Refusal[] {
  const out: Refusal[] = [];
  const lasting = (reason: string) => out.push({ reason, transient: false });
  const passing = (reason: string) => out.push({ reason, transient: true });
  if (cluster.pinnedVolumes.length > 0)
    lasting(`volumes are pinned to the node's name (LVMS, LSO): ${cluster.pinnedVolumes.join(', ')}`);
  if (cluster.lvmClusters.length > 0 || cluster.nodeFinalizers.includes(TOPOLVM_FINALIZER))
    lasting(
      `LVMS is installed (${[...cluster.lvmClusters, ...(cluster.nodeFinalizers.includes(TOPOLVM_FINALIZER) ? [`finalizer ${TOPOLVM_FINALIZER} on the Node`] : [])].join(', ')}): deleting the former Node deletes its claims`,
    );
  if (cluster.perNodeConfig.length > 0)
    lasting(`objects name the node or its hostname and would stop applying to it: ${cluster.perNodeConfig.join(', ')}`);
  const rolling = cluster.operators.filter((o) =>
    o.nodeStatuses.some((n) => (n.targetRevision ?? 0) > 0 || n.currentRevision !== o.latestAvailableRevision),
  );
  if (rolling.length > 0 || node.startupMonitor)
    passing(
      `static-pod operators are mid-rollout: ${[...rolling.map((o) => `${o.kind}/cluster`), ...(node.startupMonitor ? ['the kube-apiserver startup monitor is running'] : [])].join(', ')}`,
    );
  if (cluster.updatingPools.length > 0)
    passing(`machine-config pools are not Updated: ${cluster.updatingPools.join(', ')}`);
  if (cluster.pendingCsrs.length > 0)
    passing(`certificate signing requests are pending: ${cluster.pendingCsrs.join(', ')}`);
  if (cluster.healthChecks.length > 0)
    lasting(`a MachineHealthCheck covers the node: ${cluster.healthChecks.join(', ')}`);
  if (node.declared?.files.has(HOSTNAME_FILE))
    lasting(
      `${HOSTNAME_FILE} is declared by the MachineConfig ${node.declared.name}: the site hostname would be drift`,
    );
  if (node.addressChange)
    lasting(
      `the internal IP changes (${node.addressChange}): etcd matches its member by address, so a rename waits for a move that keeps it`,
    );
  return out;
}
