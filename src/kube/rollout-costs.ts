/**
 * What a run costs the control plane of a single node, beyond the agent's own work: the rollouts its
 * writes cause, each with the time it takes on a real single node. `plan` adds them up before anything
 * changes (src/cli/render-plan.ts); bench/rollouts counts them against the models and prices them with
 * these durations. docs/rollouts.md gives each rule with its upstream source.
 *
 * The durations are estimates from upstream's own figures and settings, not measurements of this
 * agent; each is a parameter of bench/rollouts (ROLLOUT_SECONDS_<KIND>).
 */

export const ROLLOUT_KINDS = ['kube-apiserver', 'openshift-apiserver', 'oauth-server', 'router', 'reboot'] as const;
export type RolloutKind = (typeof ROLLOUT_KINDS)[number];

export interface RolloutCost {
  /** what the technician sees go away meanwhile */
  effect: string;
  /** expected seconds, from the sources below */
  seconds: number;
  /** where the figure comes from */
  source: string;
}

export const ROLLOUT_COSTS: Readonly<Record<RolloutKind, RolloutCost>> = {
  'kube-apiserver': {
    effect: 'a new kube-apiserver revision: the API stops while its static pod restarts',
    // ~30 s for the revision to reach the installer (library-go test/library/apiserver/apiserver.go:28),
    // then the restart: origin's single-node test allows 60 s ("Actual SLO for this is 60 seconds",
    // test/extended/apiserver/resiliency.go:74-79)
    seconds: 90,
    source: 'library-go test/library/apiserver/apiserver.go:28; origin test/extended/apiserver/resiliency.go:74-79',
  },
  'openshift-apiserver': {
    effect: 'the openshift-apiserver rolls out: routes, builds and images answer 503 until its new pod is ready',
    // one replica, maxSurge 0 (deploy.yaml:19-20): the old pod goes first, after its 50 s shutdown
    // delay (config/defaultconfig.yaml:21-22), then the new one starts
    seconds: 80,
    source:
      'cluster-openshift-apiserver-operator bindata/v3.11.0/openshift-apiserver/deploy.yaml:19-20, bindata/v3.11.0/config/defaultconfig.yaml:21-22',
  },
  'oauth-server': {
    effect: 'the OAuth server rolls out: console and oc logins fail until its new pod is ready',
    // maxSurge 0 with required anti-affinity on one node; the old pod sleeps 25 s before it stops
    // (bindata/oauth-openshift/deployment.yaml:14, 28, 137-141), the new one is ready after its probes
    seconds: 45,
    source: 'cluster-authentication-operator bindata/oauth-openshift/deployment.yaml:14, 28, 137-141',
  },
  router: {
    effect: 'the default router rolls out: every route, the console included, stops answering',
    // HostNetwork: maxSurge 0 (pkg/operator/controller/ingress/deployment.go:290-302); the new pod's
    // startup probe allows up to 120 s (pkg/manifests/assets/router/deployment.yaml:52-60)
    seconds: 60,
    source:
      'cluster-ingress-operator pkg/operator/controller/ingress/deployment.go:290-302, pkg/manifests/assets/router/deployment.yaml:52-60',
  },
  reboot: {
    effect: 'the machine-config daemon reboots the node: everything stops until the cluster is back',
    // "This process might take 5 or more minutes to complete per node" (OpenShift 4.15 documentation,
    // Understanding OpenShift update duration); a single node also restarts its whole control plane
    seconds: 600,
    source: 'OpenShift 4.15 documentation, updating/understanding-openshift-update-duration',
  },
};

/** "2 kube-apiserver revisions and 1 router rollout, about 4 min" for a list of rollouts. */
export function describeRollouts(
  rollouts: readonly RolloutKind[],
  costs: Readonly<Record<RolloutKind, RolloutCost>> = ROLLOUT_COSTS,
): string {
  if (rollouts.length === 0) return 'none';
  const parts = ROLLOUT_KINDS.flatMap((kind) => {
    const n = rollouts.filter((r) => r === kind).length;
    if (n === 0) return [];
    const noun =
      kind === 'kube-apiserver' ? 'kube-apiserver revision' : kind === 'reboot' ? 'reboot' : `${kind} rollout`;
    return [`${n} ${noun}${n === 1 ? '' : 's'} (~${costs[kind].seconds}s each)`];
  });
  return `${parts.join(', ')}: about ${Math.ceil(totalSeconds(rollouts, costs) / 60)} min`;
}

/** The rollouts one after another: on a single node they do not overlap much, and each may stop the next. */
export const totalSeconds = (
  rollouts: readonly RolloutKind[],
  costs: Readonly<Record<RolloutKind, RolloutCost>> = ROLLOUT_COSTS,
): number => rollouts.reduce((sum, kind) => sum + costs[kind].seconds, 0);
