/**
 * The companion watcher on the real kube-apiserver with BENCH_OBJECTS (default 10,000) watched
 * objects spread over OLM, Cluster API, layering and ClusterOperator kinds:
 *
 * - initial sync: `watch --once -o json` (the built bundle, process start to exit) against one
 *   `kubectl get` of the same kinds in the same run, and the in-process sync of a ClusterView;
 * - idle: the long-running `watch`, once synced, left alone for BENCH_IDLE_SECONDS (default 60):
 *   resident memory and CPU time from /proc, against a bare Node process over the same time;
 * - reaction: a ClusterOperator's Degraded flipped through the status subresource, until the
 *   watcher's metrics endpoint shows it (median of BENCH_FLIPS), against the same change seen by a
 *   `kubectl get -w` on that object.
 *
 * Targets: initial sync < 5 s, idle RSS < 70 MB, idle CPU < 1 % of one core, reaction < 1 s.
 *
 *   npx tsx bench/watch.ts          (needs scripts/ensure-kube-apiserver.sh once, and ./build.sh)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '../src/log/logger.js';
import { systemClock } from '../src/ports/clock.js';
import { EMPTY_CONTEXT } from '../src/watch/model.js';
import { ClusterView } from '../src/watch/view.js';
import { startCluster, type TestCluster } from '../test/kube/cluster.js';
import { inPool } from '../test/kube/factory-cluster.js';
import { applyCrds } from '../test/kube/install.js';
import { median, printTable } from './lib.js';

const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 10_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
const FLIPS = Number(process.env.BENCH_FLIPS ?? 7);
const NAMESPACES = 50;

const repo = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bundle = path.join(repo, 'dist', 'sno-relocate.cjs');
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

interface Kind {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** share of the objects */
  share: number;
  spec(i: number): object;
  status?(i: number): object;
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const cond = (type: string, status: string) => ({ type, status, reason: 'AsExpected', message: '', lastTransitionTime: now() });
const healthyOperator = () => ({ conditions: [cond('Available', 'True'), cond('Progressing', 'False'), cond('Degraded', 'False')] });

// Shares as a cluster with many operators installed in many namespaces looks: CSVs, Subscriptions
// and InstallPlans dominate, as they do on a hub.
const KINDS: Kind[] = [
  { group: 'config.openshift.io', version: 'v1', plural: 'clusteroperators', kind: 'ClusterOperator', namespaced: false, share: 0.02, spec: () => ({}), status: healthyOperator },
  {
    group: 'operators.coreos.com', version: 'v1alpha1', plural: 'catalogsources', kind: 'CatalogSource', namespaced: true, share: 0.05,
    spec: (i) => ({ sourceType: 'grpc', image: `registry.site.example.com/catalogs/index@sha256:${i.toString(16).padStart(64, '0')}` }),
    status: () => ({ connectionState: { address: 'x.svc:50051', lastObservedState: 'READY', lastConnect: now() } }),
  },
  { group: 'operators.coreos.com', version: 'v1alpha1', plural: 'subscriptions', kind: 'Subscription', namespaced: true, share: 0.25, spec: (i) => ({ name: `pkg-${i}`, source: 'site-catalog', sourceNamespace: 'openshift-marketplace', channel: 'stable' }) },
  { group: 'operators.coreos.com', version: 'v1alpha1', plural: 'installplans', kind: 'InstallPlan', namespaced: true, share: 0.2, spec: (i) => ({ approval: 'Automatic', approved: true, clusterServiceVersionNames: [`pkg-${i}.v1.0.0`] }) },
  {
    group: 'operators.coreos.com', version: 'v1alpha1', plural: 'clusterserviceversions', kind: 'ClusterServiceVersion', namespaced: true, share: 0.25,
    spec: (i) => ({ displayName: `Package ${i}`, install: { strategy: 'deployment' } }),
  },
  { group: 'cluster.x-k8s.io', version: 'v1beta1', plural: 'machines', kind: 'Machine', namespaced: true, share: 0.17, spec: () => ({ clusterName: 'c' }) },
  { group: 'cluster.x-k8s.io', version: 'v1beta1', plural: 'machinesets', kind: 'MachineSet', namespaced: true, share: 0.04, spec: () => ({ clusterName: 'c', replicas: 1 }) },
  { group: 'cluster.x-k8s.io', version: 'v1beta1', plural: 'clusters', kind: 'Cluster', namespaced: true, share: 0.01, spec: () => ({}) },
  { group: 'machineconfiguration.openshift.io', version: 'v1', plural: 'machineconfigpools', kind: 'MachineConfigPool', namespaced: false, share: 0.01, spec: () => ({}) },
];

async function seed(kc: KubeConfig): Promise<number> {
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await inPool(Array.from({ length: NAMESPACES }, (_, i) => `bench-${i}`), 8, async (name) => void (await core.createNamespace({ body: { metadata: { name } } })));
  const jobs = KINDS.flatMap((k) => Array.from({ length: Math.round(OBJECTS * k.share) }, (_, i) => ({ k, i })));
  await inPool(jobs, 16, async ({ k, i }) => {
    const name = `${k.plural.slice(0, -1)}-${i}`;
    const namespace = k.namespaced ? `bench-${i % NAMESPACES}` : undefined;
    const body = { apiVersion: `${k.group}/${k.version}`, kind: k.kind, metadata: { name, ...(namespace && { namespace }) }, spec: k.spec(i) };
    const gvr = { group: k.group, version: k.version, plural: k.plural };
    if (namespace) await custom.createNamespacedCustomObject({ ...gvr, namespace, body });
    else await custom.createClusterCustomObject({ ...gvr, body });
    if (!k.status) return;
    const patch = [{ op: 'add', path: '/status', value: k.status(i) }];
    if (namespace) await custom.patchNamespacedCustomObjectStatus({ ...gvr, namespace, name, body: patch });
    else await custom.patchClusterCustomObjectStatus({ ...gvr, name, body: patch });
  });
  return jobs.length;
}

const timeMs = async (fn: () => Promise<unknown> | unknown): Promise<number> => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

/** Exit status of a child; `watch --once` exits 1 when a finding is an error, which is not a failure here. */
function run(argv: string[], okCodes: number[] = [0]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => (okCodes.includes(code ?? -1) ? resolve() : reject(new Error(`${argv.slice(0, 3).join(' ')}: exit ${code}: ${stderr.slice(-2000)}`))));
  });
}

async function initialSync(cluster: TestCluster, root: string): Promise<{ once: number[]; kubectl: number[]; inProcess: number[] }> {
  const kinds = KINDS.map((k) => `${k.plural}.${k.group}`).join(',');
  const once = ['node', bundle, 'watch', '--once', '-o', 'json', '--kubeconfig', cluster.kubeconfigPath, '--root', root, '--log-level', 'error'];
  const kubectl = ['kubectl', '--kubeconfig', cluster.kubeconfigPath, 'get', kinds, '-A', '-o', 'json'];
  const result = { once: [] as number[], kubectl: [] as number[], inProcess: [] as number[] };
  await run(once, [0, 1]);
  await run(kubectl);
  const log = createLogger({ level: 'error' });
  for (let i = 0; i < RUNS; i++) {
    result.once.push(await timeMs(() => run(once, [0, 1])));
    result.kubectl.push(await timeMs(() => run(kubectl)));
    const view = new ClusterView(cluster.kubeConfig(), { clock: systemClock, log, ctx: EMPTY_CONTEXT });
    result.inProcess.push(
      await timeMs(async () => {
        view.start();
        await view.synced(60_000);
      }),
    );
    const seen = view.store.count();
    await view.stop();
    if (seen < OBJECTS) throw new Error(`in-process view synced ${seen} objects, expected at least ${OBJECTS}`);
  }
  return result;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** utime + stime in seconds, and resident set in MB, of a running process */
function procSample(pid: number): { cpuSeconds: number; rssMb: number } {
  // fields after the command name, which may hold spaces, start at ")": utime and stime are 14 and 15
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  return { cpuSeconds, rssMb: rssKb / 1024 };
}

async function metric(url: string, pattern: RegExp): Promise<number | undefined> {
  try {
    const text = await (await fetch(url)).text();
    const m = pattern.exec(text);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Polls without sleeping a fixed time between tries longer than `everyMs`; bounded. */
async function until<T>(what: string, timeoutMs: number, everyMs: number, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function idleAndReaction(cluster: TestCluster, root: string): Promise<{ watchIdle: ReturnType<typeof procSample> & { cpuPercent: number }; nodeIdle: ReturnType<typeof procSample> & { cpuPercent: number }; reactionMs: number[]; kubectlMs: number[] }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/metrics`;
  const watcher = spawn('node', [bundle, 'watch', '--kubeconfig', cluster.kubeconfigPath, '--root', root, '--metrics-address', `127.0.0.1:${port}`, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const floor = spawn('node', ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  const children: ChildProcess[] = [watcher, floor];
  try {
    // synced and evaluated: the health gauge leaves -1 (unknown)
    await until('the watcher to sync', 60_000, 50, () => metric(url, /^sno_relocate_watch_health (\d+)$/m));
    const settle = 5_000;
    await new Promise((r) => setTimeout(r, settle));
    const idle = async (pid: number) => {
      const a = procSample(pid);
      await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
      const b = procSample(pid);
      return { ...b, cpuSeconds: b.cpuSeconds - a.cpuSeconds, cpuPercent: ((b.cpuSeconds - a.cpuSeconds) / IDLE_SECONDS) * 100 };
    };
    const [watchIdle, nodeIdle] = await Promise.all([idle(watcher.pid!), idle(floor.pid!)]);

    const custom = cluster.kubeConfig().makeApiClient(CustomObjectsApi);
    const gvr = { group: 'config.openshift.io', version: 'v1', plural: 'clusteroperators' };
    const name = 'clusteroperator-0';
    const errors = /^sno_relocate_watch_findings\{component="operators",severity="error"\} (\d+)$/m;
    const kubectl = spawn('kubectl', ['--kubeconfig', cluster.kubeconfigPath, 'get', `clusteroperators.config.openshift.io/${name}`, '-w', '--output-watch-events', '-o', 'jsonpath={.status.conditions[2].status}{"\\n"}'], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(kubectl);
    const lines: { at: number; text: string }[] = [];
    kubectl.stdout.on('data', (c: Buffer) => {
      for (const text of c.toString().split('\n').filter(Boolean)) lines.push({ at: performance.now(), text });
    });
    await until('kubectl to print the object', 10_000, 20, () => (lines.length > 0 ? true : undefined));
    const reactionMs: number[] = [];
    const kubectlMs: number[] = [];
    for (let i = 0; i < FLIPS; i++) {
      const degraded = i % 2 === 0 ? 'True' : 'False';
      const before = await metric(url, errors);
      const seenLines = lines.length;
      const status = { conditions: [cond('Available', 'True'), cond('Progressing', 'False'), cond('Degraded', degraded)] };
      const t = performance.now();
      await custom.patchClusterCustomObjectStatus({ ...gvr, name, body: [{ op: 'replace', path: '/status', value: status }] });
      const want = (before ?? 0) + (degraded === 'True' ? 1 : -1);
      await until('the finding to change', 10_000, 5, async () => ((await metric(url, errors)) === want ? true : undefined));
      reactionMs.push(performance.now() - t);
      const line = await until('kubectl to print the change', 10_000, 5, () => lines.slice(seenLines).find((l) => l.text === degraded));
      kubectlMs.push(line.at - t);
    }
    return { watchIdle, nodeIdle, reactionMs, kubectlMs };
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('exit', r)))));
  }
}

async function main(): Promise<void> {
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run ./build.sh first`);
  const cluster = await startCluster();
  const root = await mkdtemp(path.join(os.tmpdir(), 'bench-watch-'));
  try {
    await applyCrds(cluster.kubeconfigPath);
    const seedMs = await timeMs(() => seed(cluster.kubeConfig()));
    console.log(`seeded ${OBJECTS} objects in ${(seedMs / 1000).toFixed(1)} s`);
    const sync = await initialSync(cluster, root);
    const idle = await idleAndReaction(cluster, root);

    const m = (xs: number[]) => median(xs);
    printTable(`Initial sync of ${OBJECTS} objects (median of ${RUNS}, ms)`, [
      ['what', 'median', 'min', 'max', 'vs kubectl'],
      ['watch --once -o json (process)', m(sync.once), Math.min(...sync.once), Math.max(...sync.once), `${(m(sync.once) / m(sync.kubectl)).toFixed(2)}x`],
      ['ClusterView sync (in process)', m(sync.inProcess), Math.min(...sync.inProcess), Math.max(...sync.inProcess), `${(m(sync.inProcess) / m(sync.kubectl)).toFixed(2)}x`],
      ['kubectl get <same kinds> -A -o json', m(sync.kubectl), Math.min(...sync.kubectl), Math.max(...sync.kubectl), '1.00x'],
    ]);
    printTable(`Idle over ${IDLE_SECONDS} s after sync`, [
      ['process', 'RSS MB', 'CPU s', 'CPU % of a core'],
      ['sno-relocate watch', idle.watchIdle.rssMb, idle.watchIdle.cpuSeconds, idle.watchIdle.cpuPercent],
      ['bare node (floor)', idle.nodeIdle.rssMb, idle.nodeIdle.cpuSeconds, idle.nodeIdle.cpuPercent],
    ]);
    printTable(`ClusterOperator Degraded flipped (median of ${FLIPS}, ms from the API's answer)`, [
      ['seen by', 'median', 'max'],
      ['watcher metrics (finding)', m(idle.reactionMs), Math.max(...idle.reactionMs)],
      ['kubectl get -w (raw event)', m(idle.kubectlMs), Math.max(...idle.kubectlMs)],
    ]);
    const checks: [string, boolean][] = [
      ['initial sync < 5 s', m(sync.once) < 5000],
      ['idle RSS < 70 MB', idle.watchIdle.rssMb < 70],
      ['idle CPU < 1 %', idle.watchIdle.cpuPercent < 1],
      ['change reflected < 1 s', m(idle.reactionMs) < 1000],
    ];
    printTable('Targets', [['target', 'met'], ...checks.map(([what, ok]) => [what, ok ? 'yes' : 'NO'])]);
    if (checks.some(([, ok]) => !ok)) process.exitCode = 1;
  } finally {
    await cluster.stop();
    await rm(root, { recursive: true, force: true });
  }
}

await main();
