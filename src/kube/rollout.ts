/**
 * Whether the control plane has settled after the domain step's writes, as the operators report
 * it: the kube-apiserver operator's revision (every node at the latest, no installer at work, no
 * failed latest revision, and the latest revision's config naming the site's API host), every
 * ClusterOperator Available, not Progressing and not Degraded, and the master MachineConfigPool
 * updated. Each answer is a list of what is not settled yet; empty when all is.
 */
import yaml from 'js-yaml';
import { HOLD_MARK } from './hold-mark.js';
import { readIngressConfig, siteDomains } from './openshift.js';
import type { Kube, KubeObject } from '../ports/kube.js';

export const KUBE_APISERVER_OPERATOR = {
  apiVersion: 'operator.openshift.io/v1',
  kind: 'KubeAPIServer',
  name: 'cluster',
} as const;
export const KUBE_APISERVER_NAMESPACE = 'openshift-kube-apiserver';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}
type WithConditions = KubeObject & { status?: { conditions?: Condition[] } };
const conditionOf = (o: WithConditions, type: string) => o.status?.conditions?.find((c) => c.type === type);
const said = (c: Condition | undefined) =>
  c ? [c.reason, c.message].filter(Boolean).join(': ') || c.status : 'not reported';

interface KubeApiServerOperator extends WithConditions {
  status?: WithConditions['status'] & {
    latestAvailableRevision?: number;
    nodeStatuses?: {
      nodeName?: string;
      currentRevision?: number;
      targetRevision?: number;
      lastFailedRevision?: number;
    }[];
  };
}

/** The kube-apiserver operator, or undefined where none is at work (nothing to wait for). */
async function kubeApiServerOperator(kube: Kube): Promise<KubeApiServerOperator | undefined> {
  if (!(await kube.serves(KUBE_APISERVER_OPERATOR.apiVersion, KUBE_APISERVER_OPERATOR.kind))) return undefined;
  return kube.get<KubeApiServerOperator>(KUBE_APISERVER_OPERATOR);
}

const revisionCopy = (kube: Kube, name: string, revision: number) =>
  kube.get<KubeObject & { data?: Record<string, string> }>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    namespace: KUBE_APISERVER_NAMESPACE,
    name: `${name}-${revision}`,
  });

/** What keeps the kube-apiserver's revision from being settled with `apiHost` in it. */
export async function revisionUnsettled(kube: Kube, apiHost: string): Promise<string[]> {
  const op = await kubeApiServerOperator(kube);
  if (!op) return [];
  const latest = op.status?.latestAvailableRevision ?? 0;
  const out = installing(op);
  const config = await revisionCopy(kube, 'config', latest);
  if (!config?.data?.['config.yaml']?.includes(apiHost))
    out.push(`kube-apiserver revision ${latest} does not serve ${apiHost} yet`);
  return out;
}

/**
 * What keeps the kube-apiserver from running with the site's proxy: the operator puts proxy.config's
 * status into the pod as HTTP_PROXY and HTTPS_PROXY (cluster-kube-apiserver-operator
 * targetconfigcontroller.go:258-266), the revisioned ConfigMap kube-apiserver-pod (starter.go:596).
 */
export async function proxyRevisionUnsettled(
  kube: Kube,
  proxy: { httpProxy?: string; httpsProxy?: string },
): Promise<string[]> {
  const op = await kubeApiServerOperator(kube);
  if (!op) return [];
  const latest = op.status?.latestAvailableRevision ?? 0;
  const out = installing(op);
  const pod = yaml.load((await revisionCopy(kube, 'kube-apiserver-pod', latest))?.data?.['pod.yaml'] ?? '{}') as {
    spec?: { containers?: { name?: string; env?: { name: string; value?: string }[] }[] };
  };
  const env = pod?.spec?.containers?.find((c) => c.name === 'kube-apiserver')?.env ?? [];
  const value = (name: string) => env.find((e) => e.name === name)?.value;
  if (value('HTTP_PROXY') !== proxy.httpProxy || value('HTTPS_PROXY') !== proxy.httpsProxy)
    out.push(`kube-apiserver revision ${latest} does not carry the site's proxy yet`);
  return out;
}

/** The node's installer and revision state: empty when every node runs the latest revision. */
function installing(op: KubeApiServerOperator): string[] {
  const latest = op.status?.latestAvailableRevision ?? 0;
  const out: string[] = [];
  for (const n of op.status?.nodeStatuses ?? []) {
    if (n.currentRevision !== latest)
      out.push(`kube-apiserver on ${n.nodeName ?? 'the node'} at revision ${n.currentRevision ?? 0}, latest ${latest}`);
    if (n.targetRevision) out.push(`kube-apiserver installing revision ${n.targetRevision}`);
    if (n.lastFailedRevision !== undefined && n.lastFailedRevision === latest)
      out.push(`kube-apiserver revision ${latest} failed`);
  }
  const installer = conditionOf(op, 'NodeInstallerProgressing');
  if (installer?.status === 'True') out.push(`kube-apiserver NodeInstallerProgressing: ${said(installer)}`);
  return out;
}

export async function operatorsUnsettled(kube: Kube): Promise<string[]> {
  const out: string[] = [];
  for (const co of await kube.list<WithConditions>('config.openshift.io/v1', 'ClusterOperator')) {
    const name = `ClusterOperator ${co.metadata.name}`;
    if (conditionOf(co, 'Available')?.status !== 'True')
      out.push(`${name} not Available: ${said(conditionOf(co, 'Available'))}`);
    if (conditionOf(co, 'Progressing')?.status === 'True')
      out.push(`${name} Progressing: ${said(conditionOf(co, 'Progressing'))}`);
    if (conditionOf(co, 'Degraded')?.status === 'True')
      out.push(`${name} Degraded: ${said(conditionOf(co, 'Degraded'))}`);
  }
  return out;
}

/**
 * The newest lastTransitionTime of the ClusterOperators' conditions: since when what they say has
 * held. The agent's own (`sno-relocate`, the hold on upgrades) is left out: release-upgrades writes
 * it after health, and a component settling is what this dates, not the agent's mark.
 */
export async function operatorsChangedAt(kube: Kube): Promise<string | undefined> {
  const times = (await kube.list<WithConditions>('config.openshift.io/v1', 'ClusterOperator'))
    .filter((co) => co.metadata.name !== HOLD_MARK.name)
    .flatMap((co) => co.status?.conditions ?? [])
    .flatMap((c) => (c.lastTransitionTime ? [Date.parse(c.lastTransitionTime)] : []))
    .filter((t) => !Number.isNaN(t));
  return times.length > 0 ? new Date(Math.max(...times)).toISOString() : undefined;
}

interface Pool extends WithConditions {
  spec?: { configuration?: { name?: string } };
  status?: WithConditions['status'] & {
    configuration?: { name?: string };
    machineCount?: number;
    readyMachineCount?: number;
  };
}

export async function masterPoolUnsettled(kube: Kube): Promise<string[]> {
  if (!(await kube.serves('machineconfiguration.openshift.io/v1', 'MachineConfigPool'))) return [];
  const pool = await kube.get<Pool>({
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'MachineConfigPool',
    name: 'master',
  });
  if (!pool) return ['MachineConfigPool master not found'];
  const out: string[] = [];
  const wanted = pool.spec?.configuration?.name;
  const current = pool.status?.configuration?.name;
  if (wanted !== current) out.push(`MachineConfigPool master rendering ${wanted ?? '?'}, at ${current ?? '?'}`);
  if (conditionOf(pool, 'Updated')?.status !== 'True') out.push('MachineConfigPool master not Updated');
  if ((pool.status?.readyMachineCount ?? 0) !== (pool.status?.machineCount ?? 0))
    out.push(
      `MachineConfigPool master ${pool.status?.readyMachineCount ?? 0} of ${pool.status?.machineCount ?? 0} machines ready`,
    );
  return out;
}

/** Everything not settled yet, in one list. */
export async function unsettled(kube: Kube, site: { clusterName?: string; baseDomain: string }): Promise<string[]> {
  const { api } = await siteDomains(kube, site, await readIngressConfig(kube));
  return [
    ...(await revisionUnsettled(kube, api)),
    ...(await operatorsUnsettled(kube)),
    ...(await masterPoolUnsettled(kube)),
  ];
}
