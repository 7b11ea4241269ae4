/**
 * [image-pull-retry] Pods that could not pull their images before the switch (ImagePullBackOff,
 * ErrImagePull under the factory's pull secret and registries) are recreated once the site's pull
 * secret and mirrors are live (after health, which waits for the master pool to roll them out),
 * so they pull through the site's registries now rather than after kubelet's back-off of up to
 * five minutes. Only a pod its controller recreates is deleted; a bare pod or a static pod is
 * listed with what to do. Bounded: nothing is waited for, only pods made before the run began are
 * touched and each once (what its controller makes is new), and each is logged.
 */
import type { Site } from '../config/site.js';
import type { Step } from './step.js';
import { describeRef, refOf, type KubeObject } from '../ports/kube.js';

const PULL_FAILURES = new Set(['ImagePullBackOff', 'ErrImagePull']);
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

interface ContainerStatus {
  name: string;
  image?: string;
  state?: { waiting?: { reason?: string } };
}

export type PodObject = KubeObject & {
  metadata: KubeObject['metadata'] & {
    deletionTimestamp?: string;
    ownerReferences?: { kind: string; name: string; controller?: boolean }[];
  };
  status?: { containerStatuses?: ContainerStatus[]; initContainerStatuses?: ContainerStatus[] };
};

export interface StuckPod {
  pod: string;
  /** the images it fails to pull, with the reason kubelet gives */
  failing: string[];
  /** `ReplicaSet shop-5d8f`: what recreates it; absent for a bare or static pod */
  controller?: string;
  ref: ReturnType<typeof refOf>;
}

export interface PullRetryView {
  /** whether this site switches the pull secret or the mirrors at all */
  switches: boolean;
  stuck: StuckPod[];
}

const switches = (site: Site) =>
  site.pullSecret !== undefined || site.imageDigestMirrors.length > 0 || site.imageTagMirrors.length > 0;

/** Pods made before `before` that wait on a failed pull and are not already going away. */
export function stuckPods(pods: readonly PodObject[], before: string | undefined): StuckPod[] {
  const cutoff = before ? Date.parse(before) : Infinity;
  return pods.flatMap((pod): StuckPod[] => {
    if (pod.metadata.deletionTimestamp) return [];
    if (Date.parse(pod.metadata.creationTimestamp ?? '') >= cutoff) return [];
    const failing = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]
      .filter((c) => PULL_FAILURES.has(c.state?.waiting?.reason ?? ''))
      .map((c) => `${c.image ?? c.name} (${c.state!.waiting!.reason})`);
    if (failing.length === 0) return [];
    const owner = pod.metadata.ownerReferences?.find((o) => o.controller);
    const mirror = pod.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined;
    return [
      {
        pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
        failing,
        ...(owner && !mirror && { controller: `${owner.kind} ${owner.name}` }),
        ref: refOf(pod),
      },
    ];
  });
}

const leftAlone = (stuck: readonly StuckPod[]) =>
  stuck
    .filter((s) => !s.controller)
    .map((s) => `pod ${s.pod} cannot pull ${s.failing.join(', ')} and nothing recreates it: delete it to pull again`);

/** What apply does: delete these pods, which their controllers recreate. */
export interface PullRetryDecision {
  recreate: StuckPod[];
}

export const imagePullRetryStep: Step<PullRetryView, PullRetryDecision> = {
  name: 'image-pull-retry',
  group: 'cluster',
  description:
    "pods stuck in ImagePullBackOff or ErrImagePull from before the switch recreated once the site's pull secret and mirrors are live (bounded; bare pods listed)",
  inputs: (site) => ({ switches: switches(site) }),

  async survey(ctx) {
    if (!switches(ctx.site)) return { switches: false, stuck: [] };
    const pods = await (await ctx.kube()).list<PodObject>('v1', 'Pod');
    return { switches: true, stuck: stuckPods(pods, ctx.run?.startedAt) };
  },

  plan(view) {
    if (!view.switches)
      return { action: 'noop', reason: 'the site-config switches neither the pull secret nor the mirrors' };
    const restart = view.stuck.filter((s) => s.controller);
    const left = leftAlone(view.stuck);
    const warning = left.length > 0 ? `; warning: ${left.join('; ')}` : '';
    const warnings = left.length > 0 ? { warnings: left } : {};
    if (restart.length === 0)
      return {
        action: 'noop',
        reason: `no pod waits on a pull from before the switch that a restart would help${warning}`,
        ...warnings,
      };
    return {
      action: 'change',
      summary: `recreate ${restart.length} pod${restart.length === 1 ? '' : 's'} that failed to pull before the switch${warning}`,
      changes: restart.map((s) => ({
        action: 'delete',
        target: `Pod ${s.pod}`,
        summary: `${s.failing.join(', ')}; its ${s.controller} recreates it`,
      })),
      decision: { recreate: restart },
      ...warnings,
    };
  },

  async apply(ctx, decision) {
    const kube = await ctx.kube();
    for (const s of decision.recreate) {
      await kube.delete(s.ref);
      ctx.log.info(
        { pod: s.pod, failing: s.failing, controller: s.controller },
        `${describeRef(s.ref)} recreated to pull again`,
      );
    }
  },
};
