/**
 * The watcher at scale, on the real test API: 10,000 watched objects (CSVs, Subscriptions,
 * InstallPlans, Machines over 20 namespaces) besides a seeded factory cluster. Measures, for the built
 * executable as the watcher unit runs it: the initial sync (start to the first status file, and the
 * sync alone in-process), idle RSS, idle CPU over 60 s, and how fast a ClusterOperator going Degraded
 * reaches the status file. Baselines from the same run: `kubectl get -o json` of the same objects,
 * and an idle Node process. BENCH_BINARY=/path/to/sno-relocate measures another build;
 * BENCH_BEFORE_BINARY=/path/to/an/older/sno-relocate keeps one idle alongside for a before/after.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { createListWatch } from '../src/kube/list-watch.js';
import { createLogger } from '../src/log/logger.js';
import { systemClock } from '../src/ports/clock.js';
import { EMPTY_CONTEXT } from '../src/watch/model.js';
import { ClusterView } from '../src/watch/view.js';
import { startCluster } from '../test/kube/cluster.js';
import { inPool, seedFactoryCluster } from '../test/kube/factory-cluster.js';
import { applyCrds } from '../test/kube/install.js';
import { condition, GVR, healthyOperator, Scenario } from '../test/watch/scenario.js';
import { BENCH_BINARY, median, printTable } from './lib.js';

const BINARY = BENCH_BINARY;
const BEFORE = process.env.BENCH_BEFORE_BINARY;
const OBJECTS = { csv: 4000, subscription: 3000, installplan: 1000, machine: 2000 };
const NAMESPACES = Array.from({ length: 20 }, (_, i) => `bench-${String(i).padStart(2, '0')}`);
const IDLE_SECONDS = 60;
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run ./build.sh first`);

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const cpuTicks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]);
};
/** Polls until `probe` returns a value; the poll interval bounds the measurement error (10 ms). */
async function until<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await wait(10);
  }
}

const cluster = await startCluster();
const children: ChildProcess[] = [];
try {
  await applyCrds(cluster.kubeconfigPath);
  await seedFactoryCluster(cluster.kubeconfigPath, { csrs: false });
  const kc = cluster.kubeConfig();
  const s = new Scenario(kc);
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const ns of NAMESPACES) await s.namespace(ns);
  const started = performance.now();
  const description = 'x'.repeat(1500);
  const ns = (i: number) => NAMESPACES[i % NAMESPACES.length]!;
  await inPool([...Array(OBJECTS.csv).keys()], 32, async (i) => {
    await custom.createNamespacedCustomObject({
      ...GVR.csv,
      namespace: ns(i),
      body: {
        apiVersion: 'operators.coreos.com/v1alpha1',
        kind: 'ClusterServiceVersion',
        metadata: { name: `op-${i}.v1.0.0`, namespace: ns(i) },
        spec: {
          displayName: `Operator ${i}`,
          description,
          version: '1.0.0',
          install: {
            strategy: 'deployment',
            spec: {
              deployments: [
                {
                  name: `op-${i}`,
                  spec: {
                    replicas: 1,
                    template: {
                      spec: {
                        containers: [{ name: 'manager', image: `quay.io/acme/op-${i}@sha256:${'e'.repeat(64)}` }],
                      },
                    },
                  },
                },
              ],
            },
          },
        },
      },
    });
    await s.setStatus(
      GVR.csv,
      `op-${i}.v1.0.0`,
      { phase: 'Succeeded', reason: 'InstallSucceeded', message: 'install strategy completed with no errors' },
      ns(i),
    );
  });
  await inPool([...Array(OBJECTS.subscription).keys()], 32, (i) =>
    custom.createNamespacedCustomObject({
      ...GVR.subscription,
      namespace: ns(i),
      body: {
        apiVersion: 'operators.coreos.com/v1alpha1',
        kind: 'Subscription',
        metadata: { name: `sub-${i}`, namespace: ns(i) },
        spec: {
          name: `op-${i}`,
          source: 'redhat-operators',
          sourceNamespace: 'openshift-marketplace',
          channel: 'stable',
        },
      },
    }),
  );
  await inPool([...Array(OBJECTS.installplan).keys()], 32, (i) =>
    custom.createNamespacedCustomObject({
      group: 'operators.coreos.com',
      version: 'v1alpha1',
      plural: 'installplans',
      namespace: ns(i),
      body: {
        apiVersion: 'operators.coreos.com/v1alpha1',
        kind: 'InstallPlan',
        metadata: { name: `install-${i}`, namespace: ns(i) },
        spec: { approval: 'Automatic', approved: true, clusterServiceVersionNames: [`op-${i}.v1.0.0`] },
      },
    }),
  );
  await inPool([...Array(OBJECTS.machine).keys()], 32, (i) =>
    custom.createNamespacedCustomObject({
      ...GVR.machine,
      namespace: ns(i),
      body: {
        apiVersion: 'cluster.x-k8s.io/v1beta1',
        kind: 'Machine',
        metadata: { name: `machine-${i}`, namespace: ns(i) },
        spec: { clusterName: 'sno', bootstrap: { dataSecretName: 'x' } },
      },
    }),
  );
  const total = Object.values(OBJECTS).reduce((a, b) => a + b, 0);
  console.log(`created ${total} objects in ${((performance.now() - started) / 1000).toFixed(0)} s`);

  // baseline: kubectl listing the same kinds (one process per kind, as a script would)
  const kubectl = () => {
    const t = performance.now();
    for (const kind of [
      'clusterserviceversions',
      'subscriptions',
      'installplans',
      'machines.cluster.x-k8s.io',
      'catalogsources',
      'clusteroperators',
      'machineconfigpools',
      'customresourcedefinitions',
    ]) {
      const r = spawnSync('kubectl', ['--kubeconfig', cluster.kubeconfigPath, 'get', kind, '-A', '-o', 'json'], {
        stdio: ['ignore', 'ignore', 'pipe'],
        maxBuffer: 1 << 30,
      });
      if (r.status !== 0) throw new Error(`kubectl get ${kind}: ${r.stderr.toString()}`);
    }
    return performance.now() - t;
  };
  const kubectlMs = [kubectl(), kubectl(), kubectl()];

  // the sync alone, in this process (client already loaded)
  const syncMs: number[] = [];
  let kept = 0;
  for (let run = 0; run < 3; run++) {
    const view = new ClusterView(createListWatch(kc), {
      clock: systemClock,
      log: createLogger({ level: 'error', journal: false, write: () => undefined }),
      ctx: EMPTY_CONTEXT,
    });
    const t = performance.now();
    view.start();
    await view.synced(60_000);
    view.evaluate();
    syncMs.push(performance.now() - t);
    if (!view.status().synced) throw new Error('the view is not in sync');
    kept = view.store.count();
    await view.stop();
  }

  // the executable as the unit runs it: start to first status file
  const startWatcher = async (binary: string) => {
    const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-bench-watch-'));
    const statusFile = path.join(root, 'var/lib/sno-relocate/watch.json');
    const t = performance.now();
    const child = spawn(
      binary,
      [
        'watch',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--root',
        root,
        '--metrics-address',
        '127.0.0.1:0',
        '--log-level',
        'warn',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '' } },
    );
    children.push(child);
    // the file exists from the first event on; the sync is done once it says healthy or not
    const evaluated = () =>
      existsSync(statusFile) &&
      (JSON.parse(readFileSync(statusFile, 'utf8')) as { health: string }).health !== 'unknown';
    await until(() => (evaluated() ? true : undefined), 60_000, 'the first evaluation in the status file');
    return { child, statusFile, ms: performance.now() - t };
  };
  const firstStatus: number[] = [];
  for (let run = 0; run < 2; run++) {
    const { child, ms } = await startWatcher(BINARY);
    firstStatus.push(ms);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  const watcher = await startWatcher(BINARY);
  firstStatus.push(watcher.ms);
  const pid = watcher.child.pid!;
  const statusFile = watcher.statusFile;
  // an older build, idle beside this one on the same cluster: the before of a before/after
  const before = BEFORE ? await startWatcher(BEFORE) : undefined;

  // idle: after the sync settles, RSS and CPU over 60 s, beside an idle node process
  const idleNode = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  children.push(idleNode);
  await wait(5000);
  const ticks0 = cpuTicks(pid);
  const nodeTicks0 = cpuTicks(idleNode.pid!);
  const rssSamples: number[] = [];
  const beforeSamples: number[] = [];
  for (let i = 0; i < IDLE_SECONDS / 5; i++) {
    await wait(5000);
    rssSamples.push(rssMb(pid));
    if (before) beforeSamples.push(rssMb(before.child.pid!));
  }
  const cpuPct = ((cpuTicks(pid) - ticks0) / CLK_TCK / IDLE_SECONDS) * 100;
  const nodeCpuPct = ((cpuTicks(idleNode.pid!) - nodeTicks0) / CLK_TCK / IDLE_SECONDS) * 100;
  const nodeRss = rssMb(idleNode.pid!);

  // change to status file: a ClusterOperator degrades, then recovers
  const latency: number[] = [];
  const findingFor = () =>
    (JSON.parse(readFileSync(statusFile, 'utf8')) as { findings: { object: string }[] }).findings.some(
      (f) => f.object === 'ClusterOperator console',
    );
  for (let run = 0; run < 5; run++) {
    const t = performance.now();
    await s.setStatus(GVR.clusterOperator, 'console', {
      conditions: [condition('Available', 'True'), condition('Degraded', 'True', 'Bench', `run ${run}`)],
    });
    await until(() => (findingFor() ? true : undefined), 10_000, 'the Degraded finding');
    latency.push(performance.now() - t);
    await s.setStatus(GVR.clusterOperator, 'console', healthyOperator());
    await until(() => (findingFor() ? undefined : true), 10_000, 'the finding to clear');
  }

  printTable(`watch with ${total} watched objects, ${BINARY} (medians of 3 runs unless noted)`, [
    ['measure', 'value', 'target', 'baseline (same run)'],
    [
      'initial sync, in-process (ms)',
      median(syncMs),
      '< 5000',
      `kubectl get -A -o json of the same kinds: ${median(kubectlMs).toFixed(0)} ms (${(median(syncMs) / median(kubectlMs)).toFixed(2)}x)`,
    ],
    ['objects kept in memory (the others have nothing to report)', String(kept), '', `of ${total} watched`],
    ['executable start to first evaluation in the status file (ms)', median(firstStatus), '< 5000', ''],
    [
      `idle RSS over ${IDLE_SECONDS} s, median of ${rssSamples.length} samples (MB)`,
      median(rssSamples),
      '< 70',
      `idle node process: ${nodeRss.toFixed(1)} MB`,
    ],
    ...(BEFORE
      ? [[`idle RSS of ${BEFORE}, alongside (MB)`, median(beforeSamples), '', 'the same cluster, the same minute']]
      : []),
    [`idle CPU over ${IDLE_SECONDS} s (% of one core)`, cpuPct, '< 1', `idle node process: ${nodeCpuPct.toFixed(2)} %`],
    [
      'ClusterOperator Degraded to status file, median of 5 (ms)',
      median(latency),
      '< 1000',
      `max ${Math.max(...latency).toFixed(0)} ms`,
    ],
  ]);
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await cluster.stop();
}
