/**
 * bench/site-time's arithmetic on a recorded run, worked out by hand: a site whose domain step waits
 * for the router's rollout before its write starts a kube-apiserver revision, health waits for that
 * revision, then its stability window. Each rollout ran at 1/20 of its duration at a site.
 */
import { describe, expect, it } from 'vitest';
import { buildTimeline, criticalByLane, type ClusterRun, type SiteInput } from '../../bench/site-time/model.js';
import { lanesOf, timelineSvg } from '../../bench/site-time/svg.js';

const cluster: ClusterRun = {
  steps: [
    { name: 'csr-approval', startMs: 0, endMs: 100 },
    { name: 'domain', startMs: 100, endMs: 3300 },
    { name: 'access', startMs: 3300, endMs: 3400 },
    { name: 'health', startMs: 3400, endMs: 8150 },
    { name: 'in-service', startMs: 8150, endMs: 8250 },
  ],
  rollouts: [
    // 3 s in the run: 60 s at a site
    { kind: 'router', startMs: 200, endMs: 3200 },
    // 4.5 s: 90 s, started 50 ms after the router was done
    { kind: 'kube-apiserver', startMs: 3250, endMs: 7750 },
  ],
  // the test API server's own restart: inside the revision's 90 s at a site
  restarts: [{ startMs: 7750, endMs: 8050 }],
  inServiceWatched: false,
};

const input: SiteInput = {
  node: {
    scenario: 'stick-at-boot',
    agentStartS: 10,
    steps: [
      { name: 'ssh-keys', startS: 10, endS: 11 },
      { name: 'clock', startS: 11, endS: 13 },
      { name: 'kubelet', startS: 13, endS: 14 },
    ],
    kubeletActiveS: 15,
  },
  apiStartS: 90,
  cluster,
  durations: { 'kube-apiserver': 90, 'openshift-apiserver': 80, 'oauth-server': 45, router: 60, reboot: 600 },
  windowS: 120,
};

const seconds = (phases: { name: string; seconds: number }[]) =>
  Object.fromEntries(phases.map((p) => [p.name, Math.round(p.seconds * 100) / 100]));

describe('site time, from a recorded run', () => {
  it('brings the run to the site: rollouts at their durations, the restart inside its revision, the window inserted', () => {
    const t = buildTimeline(input);
    // kubelet active at 15 s, the API at 105 s; the run's 8.25 s become 150.45 s, and health's 120 s window
    expect(t.total).toBeCloseTo(375.45, 6);
    expect(seconds(t.phases)).toEqual({
      'power-on to agent start': 10,
      'node steps (clock sync apart)': 1,
      'clock sync': 2,
      'kubelet start (gate to active)': 2,
      'control plane start (API answering)': 90,
      // csr 0.1 s, the domain step's wait for the router 60 s and its own work, access
      'cluster steps and their rollouts': 63.25,
      'health: settle': 87.1,
      'health: stability window': 120,
      'in-service: stability window': 0,
      'after health (image pull retry, in-service, upgrades)': 0.1,
    });
    expect(t.phases.reduce((sum, p) => sum + p.seconds, 0)).toBeCloseTo(t.total, 6);
    const bar = (lane: string) => t.bars.find((b) => b.lane === lane)!;
    expect(bar('router').end - bar('router').start).toBeCloseTo(60, 6);
    expect(bar('kube-apiserver').end - bar('kube-apiserver').start).toBeCloseTo(90, 6);
  });

  it('runs the critical path through the router, the revision it held up and the window, without a gap', () => {
    const t = buildTimeline(input);
    const lanes = t.critical.map((c) => c.lane);
    expect(lanes.indexOf('router')).toBeLessThan(lanes.indexOf('kube-apiserver'));
    expect(lanes.indexOf('kube-apiserver')).toBeLessThan(lanes.indexOf('health: stability window'));
    expect(t.critical[0]!.start).toBe(0);
    expect(t.critical.at(-1)!.end).toBeCloseTo(t.total, 6);
    t.critical.slice(1).forEach((c, i) => expect(c.start).toBeCloseTo(t.critical[i]!.end, 6));
    expect(
      Object.fromEntries(criticalByLane(t.critical).map((c) => [c.name, Math.round(c.seconds * 100) / 100])),
    ).toMatchObject({ 'health: stability window': 120, 'kube-apiserver': 90, 'control plane start': 90, router: 60 });
  });

  it("counts in-service's own window only where it watched one", () => {
    const t = buildTimeline({ ...input, cluster: { ...cluster, inServiceWatched: true } });
    expect(t.total).toBeCloseTo(375.45 + 120, 6);
    expect(seconds(t.phases)['in-service: stability window']).toBe(120);
    expect(criticalByLane(t.critical)[0]).toEqual({ name: 'health: stability window', seconds: 120 });
  });

  it('stops a rollout under way for a reboot, and goes on with it after the boot', () => {
    const rebooted = {
      ...cluster,
      rollouts: [...cluster.rollouts, { kind: 'reboot' as const, startMs: 5000, endMs: 5000 }],
    };
    const t = buildTimeline({ ...input, cluster: rebooted });
    expect(t.total).toBeCloseTo(375.45 + 600, 6);
    const revision = t.bars.filter((b) => b.lane === 'kube-apiserver');
    const reboot = t.bars.find((b) => b.lane === 'reboot')!;
    expect(revision).toHaveLength(2);
    expect(revision[0]!.end).toBeCloseTo(reboot.start, 6);
    expect(revision[1]!.start).toBeCloseTo(reboot.end, 6);
    // 35 s of the revision before the reboot, 55 s after it
    expect(revision[0]!.end - revision[0]!.start).toBeCloseTo(35, 6);
    expect(criticalByLane(t.critical).find((c) => c.name === 'reboot')?.seconds).toBeCloseTo(600, 6);
  });

  it("ends a Deployment's rollout under way with the boot: its new pod is the one that starts", () => {
    const rebooted = {
      ...cluster,
      rollouts: [
        ...cluster.rollouts,
        { kind: 'openshift-apiserver' as const, startMs: 4500, endMs: 8500 },
        { kind: 'reboot' as const, startMs: 5000, endMs: 5000 },
      ],
    };
    const t = buildTimeline({ ...input, cluster: rebooted });
    const rollout = t.bars.filter((b) => b.lane === 'openshift-apiserver');
    expect(rollout).toHaveLength(1);
    expect(rollout[0]!.end).toBeCloseTo(t.bars.find((b) => b.lane === 'reboot')!.start, 6);
    // the run's last 0.2 s were the rollout's rest, which the boot holds
    expect(t.total).toBeCloseTo(375.45 + 600 - 0.2, 6);
  });

  it('draws one lane per phase and per component, the critical path and the goal', () => {
    const t = buildTimeline(input);
    expect(lanesOf(t)).toEqual([
      'power-on to agent start',
      'node steps',
      'clock sync',
      'kubelet start',
      'control plane start',
      'csr-approval',
      'domain',
      'access',
      'health',
      'health: stability window',
      'in-service',
      'kube-apiserver',
      'router',
    ]);
    const svg = timelineSvg(t, 'Site A', 600);
    for (const lane of lanesOf(t)) expect(svg).toContain(`>${lane}</text>`);
    // a red segment for each piece of the critical path
    expect(svg.match(/stroke-width="3"/g)).toHaveLength(t.critical.length);
    expect(svg).toContain('goal 10 min');
    expect(svg).toContain('in service 6.3 min');
  });
});
