/**
 * The arithmetic of bench/site-time, apart from anything it measures: from the node's part (measured
 * in the VM), the cluster's part (a run against the models, their rollouts at a fraction of their
 * durations at a site) and the waits the agent imposes, one timeline of a relocation at a site in
 * seconds from power-on: its bars (one lane per phase and per control-plane component), the phases
 * it splits into, and the critical path through them.
 *
 * The cluster run is brought to the site's clock by its rollouts: each rollout's span in the run
 * stands for its duration at a site (the models ran each at a fraction of it, so that what overlaps
 * at a site overlaps in the run), where spans overlap the fastest-running clock counts, and the
 * agent's own work outside them counts as it is. Its own work done while a rollout runs is stretched with it, which
 * errs on the long side. A reboot, which the models only record, and the stability windows, which
 * the run was given as zero, are inserted where they fall, with their durations at the site.
 */
import type { RolloutKind } from '../../src/kube/rollout-costs.js';

/** One boot of the VM with the stick, in seconds from the kernel's start on the guest's clock. */
export interface NodeRun {
  /** the VM scenario the boot is of */
  scenario: string;
  agentStartS: number;
  steps: { name: string; startS: number; endS: number }[];
  kubeletActiveS: number;
}

/** One run of the cluster steps and health against the models, in ms from the run's start. */
export interface ClusterRun {
  steps: { name: string; startMs: number; endMs: number }[];
  /** each rollout the models made; a reboot only recorded (endMs = startMs) */
  rollouts: { kind: RolloutKind; startMs: number; endMs: number }[];
  /**
   * the test API server's own restarts on a kube-apiserver revision: at the site they are part of that
   * revision's duration, which its span already counts, so they count nothing
   */
  restarts: { startMs: number; endMs: number }[];
  /** whether in-service planned a window of its own (not when health's window covered its workloads) */
  inServiceWatched: boolean;
}

export interface SiteInput {
  /** the node's part, already scaled to hardware */
  node: NodeRun;
  /** kubelet active to the API answering: the control plane's start */
  apiStartS: number;
  cluster: ClusterRun;
  /** each rollout's duration at a site, seconds */
  durations: Readonly<Record<RolloutKind, number>>;
  /** the stability window the agent imposes (--health-stable): health's, and in-service's where it watched one */
  windowS: number;
}

export type Group = 'node' | 'agent' | 'wait' | 'component';

export interface Bar {
  lane: string;
  group: Group;
  start: number;
  end: number;
  /** what the bar is, where its lane holds several */
  label?: string;
}

export interface Phase {
  name: string;
  seconds: number;
}

export interface Timeline {
  /** power-on to in service, seconds */
  total: number;
  bars: Bar[];
  /** the phases the total splits into, in order; they add up to it */
  phases: Phase[];
  /** the critical path, in order: each piece a stretch of one lane */
  critical: Bar[];
}

/** The node steps' own lane; the clock's and kubelet's have lanes of their own (they wait). */
export const LANE = {
  boot: 'power-on to agent start',
  node: 'node steps',
  clock: 'clock sync',
  kubelet: 'kubelet start',
  api: 'control plane start',
  cluster: 'other cluster steps',
  healthWindow: 'health: stability window',
  inServiceWindow: 'in-service: stability window',
} as const;

/** Cluster steps that get a lane of their own; the rest share one. */
const OWN_LANE = new Set(['csr-approval', 'domain', 'access', 'proxy', 'extra-manifests', 'health', 'in-service']);
const EPS = 1e-6;

/** Merges spans into disjoint ones, in order. */
function union(spans: readonly (readonly [number, number])[]): [number, number][] {
  const out: [number, number][] = [];
  for (const [s, e] of [...spans].filter(([a, b]) => b > a).sort((a, b) => a[0] - b[0])) {
    const last = out.at(-1);
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}

const inside = (spans: readonly [number, number][], t: number) => spans.some(([s, e]) => t > s && t < e);

/**
 * The site's clock of the cluster run: ms of the run to seconds after its start at the site. A
 * rollout's span runs at its duration at the site over its length in the run (where spans overlap,
 * the fastest); the test API server's restarts outside any span count nothing; the rest counts as
 * it is; each splice adds its seconds at its instant.
 */
export function siteClock(
  cluster: ClusterRun,
  durations: Readonly<Record<RolloutKind, number>>,
  splices: readonly { atMs: number; seconds: number }[],
): (ms: number) => number {
  const spans = cluster.rollouts
    .filter((r) => r.endMs > r.startMs)
    .map((r) => {
      const rate = (durations[r.kind] * 1000) / (r.endMs - r.startMs);
      const reboot = absorbingReboot(cluster, r);
      return reboot === undefined ? { ...r, rate } : { ...r, endMs: reboot, absorbedTo: r.endMs, rate };
    });
  // a deployment's rollout under way when the node reboots ends with the boot: the rest of its span is the boot's
  const absorbed = spans.flatMap((r) => ('absorbedTo' in r ? [[r.endMs, r.absorbedTo] as const] : []));
  const frozen = union([...cluster.restarts.map((r) => [r.startMs, r.endMs] as const), ...absorbed]);
  const cuts = [...new Set([0, ...spans.flatMap((r) => [r.startMs, r.endMs]), ...frozen.flat()])].sort((a, b) => a - b);
  const rate = (t: number) => {
    const under = spans.filter((r) => t > r.startMs && t < r.endMs).map((r) => r.rate);
    return under.length > 0 ? Math.max(...under) : inside(frozen, t) ? 0 : 1;
  };
  return (ms) => {
    let seconds = 0;
    cuts.forEach((a, i) => {
      const b = Math.min(cuts[i + 1] ?? Infinity, ms);
      if (b > a) seconds += ((b - a) * rate((a + b) / 2)) / 1000;
    });
    // a splice at an instant comes before what ends or starts there
    return seconds + splices.filter((x) => x.atMs <= ms).reduce((sum, x) => sum + x.seconds, 0);
  };
}

/**
 * Walks back from the end along the agent's phases: within a phase, the side bar (a rollout, a
 * reboot, a window) that ended last before the walk's point held the agent up, and what held up its
 * start is found the same way; where no side bar ends, the agent's own phase is the path.
 */
export function criticalPath(spine: readonly Bar[], side: readonly Bar[]): Bar[] {
  const out: Bar[] = [];
  let i = spine.length - 1;
  let t = spine[i]?.end ?? 0;
  while (i >= 0) {
    const phase = spine[i]!;
    if (t <= phase.start + EPS) {
      i -= 1;
      continue;
    }
    const held = side
      .filter((b) => b.end > b.start && b.end <= t + EPS && b.end > phase.start + EPS)
      .sort((a, b) => b.end - a.end)[0];
    if (!held) {
      out.push({ ...phase, end: t });
      t = phase.start;
      i -= 1;
      continue;
    }
    if (t - held.end > EPS) out.push({ ...phase, start: held.end, end: t });
    out.push(held);
    t = held.start;
  }
  return out.reverse();
}

/** the rollouts a reboot ends: a Deployment's new pod is simply the one that starts with the boot */
const ENDED_BY_REBOOT = new Set<RolloutKind>(['openshift-apiserver', 'oauth-server', 'router']);

/** The reboot (its instant in the run) that ends a Deployment's rollout under way, if one does. */
function absorbingReboot(cluster: ClusterRun, r: ClusterRun['rollouts'][number]): number | undefined {
  if (!ENDED_BY_REBOOT.has(r.kind)) return undefined;
  return cluster.rollouts.find((x) => x.kind === 'reboot' && x.startMs > r.startMs && x.startMs < r.endMs)?.startMs;
}

/**
 * A rollout under way when the node reboots stops with everything else: a Deployment's ends with
 * the boot, a kube-apiserver revision not yet installed goes on after it.
 */
function pausedBy(reboots: readonly Bar[], bar: Bar): Bar[] {
  const r = reboots.find((x) => bar.start < x.start && bar.end > x.start);
  if (!r) return [bar];
  const goesOn = !ENDED_BY_REBOOT.has(bar.lane as RolloutKind) && bar.end > r.end;
  return [{ ...bar, end: r.start }, ...(goesOn ? pausedBy(reboots, { ...bar, start: r.end }) : [])];
}

const laneOf = (step: string) => (OWN_LANE.has(step) ? step : LANE.cluster);

/** The whole relocation at the site: bars, phases and critical path. */
export function buildTimeline(input: SiteInput): Timeline {
  const { node, cluster } = input;
  const nodeBars: Bar[] = [
    { lane: LANE.boot, group: 'node', start: 0, end: node.agentStartS },
    ...node.steps.map((s): Bar => {
      const lane = s.name === 'clock' ? LANE.clock : s.name === 'kubelet' ? LANE.kubelet : LANE.node;
      return { lane, group: lane === LANE.node ? 'node' : 'wait', start: s.startS, end: s.endS, label: s.name };
    }),
  ];
  const kubeletStep = nodeBars.find((b) => b.label === 'kubelet');
  // kubelet's step opens the gate; the unit turns active after it
  if (kubeletStep) kubeletStep.end = Math.max(kubeletStep.end, node.kubeletActiveS);
  const apiBar: Bar = {
    lane: LANE.api,
    group: 'wait',
    start: node.kubeletActiveS,
    end: node.kubeletActiveS + input.apiStartS,
  };
  const offset = apiBar.end;
  const step = (name: string) => cluster.steps.find((s) => s.name === name);
  const health = step('health');
  const inService = step('in-service');
  const reboots = cluster.rollouts.filter((r) => r.kind === 'reboot');
  const ownWindow = inService && cluster.inServiceWatched ? inService : undefined;
  const windowed = [
    ...(health ? [{ lane: LANE.healthWindow, at: health.endMs, step: health.name }] : []),
    ...(ownWindow ? [{ lane: LANE.inServiceWindow, at: ownWindow.endMs, step: ownWindow.name }] : []),
  ];
  const splices = [
    ...reboots.map((r) => ({ atMs: r.startMs, seconds: input.durations.reboot })),
    ...windowed.map((w) => ({ atMs: w.at, seconds: input.windowS })),
  ];
  const clock = siteClock(cluster, input.durations, splices);
  const at = (ms: number) => offset + clock(ms);
  const clusterBars = cluster.steps.map((s): Bar => ({
    lane: laneOf(s.name),
    group: 'agent',
    start: at(s.startMs),
    end: at(s.endMs),
    label: s.name,
  }));
  const rebootBars = reboots.map((r): Bar => ({
    lane: 'reboot',
    group: 'component',
    start: at(r.startMs) - input.durations.reboot,
    end: at(r.startMs),
  }));
  const components = [
    ...rebootBars,
    ...cluster.rollouts
      .filter((r) => r.kind !== 'reboot')
      .flatMap((r) =>
        pausedBy(rebootBars, { lane: r.kind, group: 'component', start: at(r.startMs), end: at(r.endMs) }),
      ),
  ];
  const windows = windowed.map((w): Bar => {
    const end = at(w.at);
    const bar: Bar = { lane: w.lane, group: 'wait', start: end - input.windowS, end };
    // a step that found the cluster settled at once still holds its window
    const owner = clusterBars.find((b) => b.label === w.step)!;
    owner.start = Math.min(owner.start, bar.start);
    return bar;
  });
  const spine = [...nodeBars, apiBar, ...clusterBars];
  const total = spine.at(-1)!.end;
  return {
    total,
    bars: [...spine, ...windows, ...components],
    phases: phases(spine, windows, node, input.apiStartS, total),
    critical: criticalPath(spine, [...components, ...windows]),
  };
}

/** The split of the total, in order: consecutive stretches of the spine, so they add up to it. */
function phases(
  spine: readonly Bar[],
  windows: readonly Bar[],
  node: NodeRun,
  apiStartS: number,
  total: number,
): Phase[] {
  const clockS = spine.filter((b) => b.lane === LANE.clock).reduce((s, b) => s + b.end - b.start, 0);
  const kubeletStart = spine.find((b) => b.label === 'kubelet')?.start ?? node.kubeletActiveS;
  const health = spine.find((b) => b.label === 'health');
  const windowS = (lane: string) => windows.filter((w) => w.lane === lane).reduce((s, w) => s + w.end - w.start, 0);
  const clusterStart = node.kubeletActiveS + apiStartS;
  const healthStart = health?.start ?? total;
  const healthEnd = health?.end ?? total;
  const healthWindow = windowS(LANE.healthWindow);
  const inServiceWindow = windowS(LANE.inServiceWindow);
  return [
    { name: 'power-on to agent start', seconds: node.agentStartS },
    { name: 'node steps (clock sync apart)', seconds: kubeletStart - node.agentStartS - clockS },
    { name: 'clock sync', seconds: clockS },
    { name: 'kubelet start (gate to active)', seconds: node.kubeletActiveS - kubeletStart },
    { name: 'control plane start (API answering)', seconds: apiStartS },
    { name: 'cluster steps and their rollouts', seconds: healthStart - clusterStart },
    { name: 'health: settle', seconds: healthEnd - healthStart - healthWindow },
    { name: 'health: stability window', seconds: healthWindow },
    { name: 'in-service: stability window', seconds: inServiceWindow },
    { name: 'after health (image pull retry, in-service, upgrades)', seconds: total - healthEnd - inServiceWindow },
  ];
}

/** Seconds of the critical path spent in each lane, longest first. */
export function criticalByLane(critical: readonly Bar[]): Phase[] {
  const sums = new Map<string, number>();
  for (const b of critical) sums.set(b.lane, (sums.get(b.lane) ?? 0) + b.end - b.start);
  return [...sums].map(([name, seconds]) => ({ name, seconds })).sort((a, b) => b.seconds - a.seconds);
}
