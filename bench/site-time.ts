/**
 * What a store waits for: power-on with the stick to in service, for two sites. A: a new domain, pull
 * secret, mirrors, client CA, kubeadmin and the store's own app named in `inService`; B: the same
 * plus a proxy and a trust bundle. One figure per site, split into its phases, and a timeline
 * picture (docs/site-time-a.svg, -b.svg) with one lane per phase and per control-plane component.
 *
 *   node      measured in the VM of test/e2e (bench/site-time/node.ts): kernel start to the agent's
 *             start, each node step, kubelet active, on the guest's clock; recorded in
 *             bench/site-time/node-runs.json by `npm run bench:site-time:node` (boots VMs), and scaled
 *             to hardware by the emulation's slowdown: the agent's executable started in the guest
 *             over the same on the host
 *   cluster   the cluster steps, health and in-service run against the real kube-apiserver with the
 *             models (test/cluster/env.ts), their rollouts at ROLLOUT_TIME_FACTOR of the durations in
 *             src/kube/rollout-costs.ts (the table of docs/rollouts.md), brought back to the site's
 *             clock by bench/site-time/model.ts; the control plane's start after kubelet is priced
 *             as one kube-apiserver restart from the same table
 *   waits     the stability windows of health and in-service (--health-stable, inserted at their
 *             length: the runs use 0), the clock sync and CSR approvals as they happened, each with
 *             its bound from src/base/timeouts.ts
 *
 * Medians of BENCH_RUNS (default 5) runs with min and max; the picture is of the median run.
 *
 *   npm run bench:site-time          (needs scripts/ensure-kube-apiserver.sh once)
 *   npm run bench:site-time:node     (boots SITE_TIME_BOOTS, default 1, VMs under flock /tmp/sno-vm.lock)
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { CLOCK_SYNC_TIMEOUT_SECONDS, CSR_WAIT_SECONDS, DEFAULT_HEALTH_TIMEOUT_SECONDS } from '../src/base/timeouts.js';
import { OPTIONS } from '../src/cli/option-table.js';
import type { Site } from '../src/config/site.js';
import { ROLLOUT_COSTS, ROLLOUT_KINDS, type RolloutKind } from '../src/kube/rollout-costs.js';
import { opensslCa } from '../test/helpers/openssl.js';
import {
  agent,
  CLUSTER_PHASE,
  ROLLOUT_TIME_FACTOR,
  seedKubeadmin,
  startFactory,
  storeSite,
} from '../test/cluster/env.js';
import { UPSTREAM_MS } from '../test/cluster/models/durations.js';
import { reportFigure } from './figures.js';
import { median, REPO } from './lib.js';
import { buildTimeline, criticalByLane, type ClusterRun, type NodeRun, type Timeline } from './site-time/model.js';
import type { NodeMeasurement } from './site-time/node.js';
import { timelineSvg } from './site-time/svg.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
/** the node's own boots (the VM suite's recorded boots come on top) */
const NODE_BOOTS = Number(process.env.SITE_TIME_BOOTS ?? 1);
const NODE_RUNS = path.join(REPO, 'bench/site-time/node-runs.json');
const CLUSTER_RUNS = path.join(REPO, 'bench/site-time/cluster-runs.json');
const HEALTH_STABLE_S = Number(process.env.SITE_HEALTH_STABLE ?? OPTIONS['health-stable'].default);
const GOAL_S = { A: 10 * 60, B: 20 * 60 } as const;
const DURATIONS = Object.fromEntries(ROLLOUT_KINDS.map((k) => [k, ROLLOUT_COSTS[k].seconds])) as Record<
  RolloutKind,
  number
>;
/** a rollout's span in the run: its duration at a site (the table of docs/rollouts.md) times the models' factor */
const modelMs = (kind: RolloutKind) => ROLLOUT_COSTS[kind].seconds * 1000 * ROLLOUT_TIME_FACTOR;

const APP = { namespace: 'store-app', name: 'pos' };

async function sites(): Promise<Record<'A' | 'B', Site>> {
  const work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-bench-site-time-'));
  const clientCa = readFileSync(opensslCa(work, 'store42-admins').crt, 'utf8');
  const bundle = readFileSync(opensslCa(work, 'store42-proxy-ca').crt, 'utf8');
  const proxyUrl = 'http://proxy.store42.example.com:3128';
  const a = storeSite({
    access: { clientCaPem: clientCa, kubeadminPasswordHash: `$2b$12$${'K'.repeat(53)}` },
    inService: { workloads: [{ kind: 'Deployment', ...APP }], timeoutSeconds: 300 },
  });
  return {
    A: a,
    B: {
      ...a,
      proxy: { httpProxy: proxyUrl, httpsProxy: proxyUrl, noProxy: '.store42.example.com' },
      trustBundle: { caBundlePem: bundle, proxyTrustedCA: true },
    },
  };
}

/**
 * The ledger's rollouts as spans of the run: a deployment's from its start for its modelled duration,
 * a kube-apiserver's from its first revision made to its install and the restart's modelled outage.
 */
function rolloutSpans(entries: readonly { kind: string; at: number }[], t0: number): ClusterRun['rollouts'] {
  const out: ClusterRun['rollouts'] = [];
  let revisionAt: number | undefined;
  for (const e of entries) {
    const at = e.at - t0;
    if (e.kind === 'kube-apiserver-revision') revisionAt ??= at;
    else if (e.kind === 'kube-apiserver') {
      // the installer's share ends here; the restart's share follows (the API down, models/durations.ts)
      const restartMs = UPSTREAM_MS.restartDown * ROLLOUT_TIME_FACTOR;
      out.push({
        kind: 'kube-apiserver',
        startMs: revisionAt ?? at + restartMs - modelMs('kube-apiserver'),
        endMs: at + restartMs,
      });
      revisionAt = undefined;
    } else if (e.kind === 'reboot') out.push({ kind: 'reboot', startMs: at, endMs: at });
    else if (e.kind === 'openshift-apiserver' || e.kind === 'oauth-server' || e.kind === 'router')
      out.push({ kind: e.kind, startMs: at, endMs: at + modelMs(e.kind) });
  }
  return out;
}

async function clusterOnce(site: Site): Promise<ClusterRun> {
  const env = await startFactory();
  try {
    const kc = env.cluster.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await seedKubeadmin(env, 'factory');
    // the store's app, ready as its controller reports it (no controller runs here)
    const apps = kc.makeApiClient(AppsV1Api);
    await core.createNamespace({ body: { metadata: { name: APP.namespace } } });
    const template = {
      metadata: { labels: { app: APP.name } },
      spec: { containers: [{ name: 'pos', image: 'pos:1' }] },
    };
    const d = await apps.createNamespacedDeployment({
      namespace: APP.namespace,
      body: {
        metadata: { name: APP.name },
        spec: { replicas: 1, selector: { matchLabels: { app: APP.name } }, template },
      },
    });
    await apps.replaceNamespacedDeploymentStatus({
      ...APP,
      body: {
        ...d,
        status: {
          observedGeneration: d.metadata?.generation ?? 1,
          replicas: 1,
          updatedReplicas: 1,
          readyReplicas: 1,
          availableReplicas: 1,
        },
      },
    });
    const a = await agent(env, site, undefined, undefined, {
      healthTimeoutSeconds: DEFAULT_HEALTH_TIMEOUT_SECONDS,
      healthStableSeconds: 0,
    });
    const from = env.models!.ledger.entries.length;
    const t0 = Date.now();
    const restarts: ClusterRun['restarts'] = [];
    const restart = env.cluster.restartApiServer.bind(env.cluster);
    env.cluster.restartApiServer = async (o) => {
      const startMs = Date.now() - t0;
      try {
        await restart(o);
      } finally {
        restarts.push({ startMs, endMs: Date.now() - t0 });
      }
    };
    const state = await a.run([...CLUSTER_PHASE, 'health']);
    if (state.result !== 'succeeded') throw new Error(`run ${state.result}: ${state.message ?? ''}`);
    const steps = Object.entries(state.steps)
      .map(([name, r]) => ({
        name,
        startMs: Date.parse(r.startedAt) - t0,
        endMs: Date.parse(r.finishedAt ?? r.startedAt) - t0,
      }))
      .sort((x, y) => x.startMs - y.startMs);
    return {
      steps,
      rollouts: rolloutSpans(env.models!.ledger.entries.slice(from), t0),
      restarts,
      // a window of its own is a change it plans (attempts), not a step it finds done. A run with a zero
      // window can find health's window behind it (health then plans nothing, and in-service watches
      // one of its own); at a site health holds its window and watches the app through it
      inServiceWatched: (state.steps['in-service']?.attempts ?? 0) > 0 && (state.steps.health?.attempts ?? 0) > 0,
    };
  } finally {
    await env.stop();
  }
}

/** BENCH_RUNS runs of each site, in turns; recorded in CLUSTER_RUNS. */
async function measureCluster(): Promise<Record<'A' | 'B', ClusterRun[]>> {
  const site = await sites();
  const runs: Record<'A' | 'B', ClusterRun[]> = { A: [], B: [] };
  for (let i = 0; i < RUNS; i++)
    for (const s of ['A', 'B'] as const) {
      runs[s].push(await clusterOnce(site[s]));
      console.log(`cluster: site ${s} run ${i + 1}/${RUNS} done`);
    }
  writeFileSync(CLUSTER_RUNS, `${JSON.stringify({ timeFactor: ROLLOUT_TIME_FACTOR, runs }, null, 1)}\n`);
  return runs;
}

/** the node part as recorded; without a boot of its own (only the VM suite's journals), no reference */
type NodeRecording = Omit<NodeMeasurement, 'guestReferenceS' | 'hostReferenceS'> &
  Partial<NodeMeasurement> & { measuredAt: string };

/** The factor from the emulated guest to hardware: the agent's start in the guest over the same on the host. */
function hardwareFactor(rec: NodeRecording): { factor: number; how: string } {
  if (rec.guestReferenceS === undefined || rec.hostReferenceS === undefined)
    return { factor: 1, how: 'not measured (no boot of its own recorded): the emulated figures as they are' };
  return {
    factor: rec.guestReferenceS / rec.hostReferenceS,
    how: `\`sno-relocate --version\` takes ${(rec.guestReferenceS * 1000).toFixed(0)} ms in the emulated guest, ${(rec.hostReferenceS * 1000).toFixed(0)} ms on the host`,
  };
}

const scaled = (r: NodeRun, f: number): NodeRun => ({
  ...r,
  agentStartS: r.agentStartS / f,
  kubeletActiveS: r.kubeletActiveS / f,
  steps: r.steps.map((s) => ({ ...s, startS: s.startS / f, endS: s.endS / f })),
});

const stats = (xs: number[]) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const mm = (s: { median: number; min: number; max: number }, unit = 60) =>
  `${(s.median / unit).toFixed(1)} (min ${(s.min / unit).toFixed(1)}, max ${(s.max / unit).toFixed(1)})`;

async function main(): Promise<void> {
  if (process.argv.includes('--node')) {
    const { measureNode } = await import('./site-time/node.js');
    const rec: NodeRecording = { measuredAt: new Date().toISOString(), ...(await measureNode(NODE_BOOTS)) };
    writeFileSync(NODE_RUNS, `${JSON.stringify(rec, null, 1)}\n`);
    console.log(`${rec.runs.length} boots recorded in ${path.relative(REPO, NODE_RUNS)}`);
  }
  const recorded = JSON.parse(readFileSync(NODE_RUNS, 'utf8')) as NodeRecording;
  const emulated = recorded.runs;
  const { factor, how } = hardwareFactor(recorded);
  const clusterRuns = process.argv.includes('--recorded')
    ? (JSON.parse(readFileSync(CLUSTER_RUNS, 'utf8')) as { runs: Record<'A' | 'B', ClusterRun[]> }).runs
    : await measureCluster();
  const timeline = (s: 'A' | 'B', i: number, f: number): Timeline =>
    buildTimeline({
      node: scaled(emulated[i % emulated.length]!, f),
      apiStartS: ROLLOUT_COSTS['kube-apiserver'].seconds,
      cluster: clusterRuns[s][i]!,
      durations: DURATIONS,
      windowS: HEALTH_STABLE_S,
    });
  console.log(
    `\nnode part: ${emulated.length} boots recorded ${recorded.measuredAt}; hardware factor ${factor.toFixed(2)} (${how})`,
  );
  for (const s of ['A', 'B'] as const) {
    const lines = clusterRuns[s].map((_, i) => timeline(s, i, factor));
    const asEmulated = clusterRuns[s].map((_, i) => timeline(s, i, 1));
    const total = stats(lines.map((t) => t.total));
    // the picture is of the run nearest the median (an even count's median is between two)
    const pick = [...lines].sort((a, b) => Math.abs(a.total - total.median) - Math.abs(b.total - total.median))[0]!;
    console.log(
      `\nscenario ${s}: power-on to in service ${mm(total)} min; the node part as emulated: ${mm(stats(asEmulated.map((t) => t.total)))} min`,
    );
    console.log('phase                                                   median s   min s   max s');
    const phases = pick.phases.map((p, j) => ({ name: p.name, ...stats(lines.map((t) => t.phases[j]!.seconds)) }));
    for (const p of phases)
      console.log(
        `${p.name.padEnd(56)}${p.median.toFixed(1).padStart(8)}${p.min.toFixed(1).padStart(8)}${p.max.toFixed(1).padStart(8)}`,
      );
    console.log('critical path of the median run, by lane (s):');
    for (const c of criticalByLane(pick.critical))
      console.log(`  ${c.name.padEnd(36)}${c.seconds.toFixed(1).padStart(8)}`);
    const file = path.join(REPO, `docs/site-time-${s.toLowerCase()}.svg`);
    writeFileSync(
      file,
      timelineSvg(
        pick,
        `Site ${s}: ${s === 'A' ? 'domain, pull secret, mirrors, client CA, kubeadmin' : 'the same plus a proxy and trust bundle'}`,
        GOAL_S[s],
      ),
    );
    console.log(`timeline: ${path.relative(REPO, file)}`);
    const onPath = criticalByLane(pick.critical).filter((c) => c.seconds >= 10);
    reportFigure({
      what: `site ${s}, power-on to in service (${s === 'A' ? 'domain, pull secret, mirrors, client CA, kubeadmin, app' : 'the same plus a proxy and trust bundle'})`,
      target: `<= ${GOAL_S[s] / 60} min`,
      measured: `${mm(total)} min: ${phases.map((p) => `${p.name} ${Math.round(p.median)} s`).join(', ')}; critical path: ${onPath.map((c) => `${c.name} ${Math.round(c.seconds)} s`).join(', ')}`,
      baseline: `the node part as emulated: ${mm(stats(asEmulated.map((t) => t.total)))} min`,
    });
  }
  const nodeS = (f: number) => stats(emulated.map((r) => r.kubeletActiveS / f));
  reportFigure({
    what: 'site: power-on (kernel start) to kubelet active, the node part in the VM',
    target: '',
    measured: `${emulated.length} boots: ${mm(nodeS(factor), 1)} s ${factor === 1 ? 'as emulated' : 'on hardware'}; the factor to hardware ${factor === 1 ? '' : `${factor.toFixed(1)}, `}${how}`,
    baseline: `as emulated: ${mm(nodeS(1), 1)} s`,
  });
  console.log(
    `\nbounds: clock sync ${CLOCK_SYNC_TIMEOUT_SECONDS} s, CSR approvals ${CSR_WAIT_SECONDS} s, health ${DEFAULT_HEALTH_TIMEOUT_SECONDS} s + ${HEALTH_STABLE_S} s window`,
  );
}

await main();
