/**
 * What else may be moving the cluster: a ClusterVersion update, a MachineConfigPool roll-out, an
 * image-based upgrade or an IP change of the lifecycle agent. The agent's own changes must not
 * overlap them (lifecycle-agent refuses an IP change during an image-based upgrade and the other
 * way round for the same reason).
 *
 * Shapes: ClusterVersion and MachineConfigPool conditions as the cluster-version operator and the
 * machine-config operator set them; ImageBasedUpgrade `upgrade` and IPConfig `ipconfig`
 * (lca.openshift.io/v1) as openshift-kni/lifecycle-agent defines them in
 * api/ipconfig/v1/types.go and controllers/utils/conditions.go: a stage in spec, and an `Idle`
 * condition that is True only when nothing is in progress (the other conditions say which stage,
 * the last one being the current state, as its printer columns show it).
 */
import type { Kube, KubeObject, ObjectRef } from '../ports/kube.js';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

type WithConditions = KubeObject & { spec?: { stage?: string }; status?: { conditions?: Condition[] } };

export const CLUSTER_VERSION: ObjectRef = {
  apiVersion: 'config.openshift.io/v1',
  kind: 'ClusterVersion',
  name: 'version',
};
const POOL = { apiVersion: 'machineconfiguration.openshift.io/v1', kind: 'MachineConfigPool' } as const;
export const IMAGE_BASED_UPGRADE: ObjectRef = {
  apiVersion: 'lca.openshift.io/v1',
  kind: 'ImageBasedUpgrade',
  name: 'upgrade',
};
export const IP_CONFIG: ObjectRef = { apiVersion: 'lca.openshift.io/v1', kind: 'IPConfig', name: 'ipconfig' };

/**
 * One thing moving the cluster; `settles` when it finishes by itself, so waiting for it helps;
 * `lifecycle` when the lifecycle agent drives it (never the result of the agent's own writes).
 */
export interface Motion {
  what: string;
  settles: boolean;
  lifecycle?: boolean;
}

const conditionOf = (obj: WithConditions | undefined, type: string): Condition | undefined =>
  obj?.status?.conditions?.find((c) => c.type === type);

const said = (c: Condition | undefined): string =>
  c ? ` (${[c.reason, c.message].filter((p) => p !== undefined && p !== '').join(': ') || c.type})` : '';

function clusterVersionMotion(cv: WithConditions | undefined): Motion[] {
  const progressing = conditionOf(cv, 'Progressing');
  if (progressing?.status !== 'True') return [];
  return [{ what: `ClusterVersion version is Progressing${said(progressing)}`, settles: true }];
}

function poolMotions(pools: readonly WithConditions[]): Motion[] {
  return pools.flatMap((pool): Motion[] => {
    const name = `MachineConfigPool ${pool.metadata.name}`;
    const degraded = conditionOf(pool, 'Degraded');
    if (degraded?.status === 'True') return [{ what: `${name} is Degraded${said(degraded)}`, settles: false }];
    const updating = conditionOf(pool, 'Updating');
    if (updating?.status === 'True') return [{ what: `${name} is Updating${said(updating)}`, settles: true }];
    return [];
  });
}

/**
 * An ImageBasedUpgrade or IPConfig that is not idle: its stage is not Idle, or its Idle condition
 * is not True. Neither finishes by itself: a stage waits for the next one an administrator sets.
 */
function lifecycleMotion(obj: WithConditions | undefined): Motion[] {
  if (!obj) return [];
  const stage = obj.spec?.stage ?? 'Idle';
  const idle = conditionOf(obj, 'Idle');
  if (stage === 'Idle' && idle?.status !== 'False') return [];
  const latest = obj.status?.conditions?.at(-1);
  return [
    {
      what: `${obj.kind} ${obj.metadata.name} is in stage ${stage}${said(latest)}: finish or abort it (spec.stage: Idle) first`,
      settles: false,
      lifecycle: true,
    },
  ];
}

/** Everything moving the cluster now; kinds the cluster does not serve count as idle. */
export async function clusterMotions(kube: Kube): Promise<Motion[]> {
  const [cv, pools, ibu, ipconfig] = await Promise.all([
    kube.get<WithConditions>(CLUSTER_VERSION),
    (async () =>
      (await kube.serves(POOL.apiVersion, POOL.kind)) ? kube.list<WithConditions>(POOL.apiVersion, POOL.kind) : [])(),
    kube.get<WithConditions>(IMAGE_BASED_UPGRADE),
    kube.get<WithConditions>(IP_CONFIG),
  ]);
  return [...lifecycleMotion(ibu), ...lifecycleMotion(ipconfig), ...clusterVersionMotion(cv), ...poolMotions(pools)];
}
