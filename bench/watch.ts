/**
 * The watcher at scale, on the real test API: 10,000 watched objects (CSVs, Subscriptions,
 * InstallPlans, Machines over 20 namespaces) besides a seeded factory cluster. Measures, for the built
 * executable as the watcher unit runs it (with the unit's Environment=): the initial sync (start to
 * the first status file, and the sync alone in-process), idle RSS (three watchers side by side, and
 * how much of it is pages of the executable), idle CPU over 60 s, and how fast a ClusterOperator
 * going Degraded reaches the status file. The executable's pages are dropped from the page cache before
 * the watchers start, as after a boot; one more watcher is measured after the file was read whole.
 * Baselines from the same run: `kubectl get -o json` of the same objects,
 * and an idle Node process. BENCH_BINARY=/path/to/sno-relocate measures another build;
 * BENCH_BEFORE_BINARY=/path/to/an/older/sno-relocate keeps one idle alongside for a before/after.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createListWatch } from '../src/kube/list-watch.js';
import { createLogger } from '../src/log/logger.js';
import { systemClock } from '../src/ports/clock.js';
import { EMPTY_CONTEXT } from '../src/watch/model.js';
import { ClusterView } from '../src/watch/view.js';
import { startCluster } from '../test/kube/cluster.js';
import { seedFactoryCluster } from '../test/kube/factory-cluster.js';
import { applyCrds } from '../test/kube/install.js';
import { condition, GVR, healthyOperator, Scenario } from '../test/watch/scenario.js';
import { reportFigure } from './figures.js';
import { BENCH_BINARY, median, printTable, REPO } from './lib.js';
import { seedWatchedObjects, WATCHED_TOTAL } from './watch-objects.js';

const BINARY = BENCH_BINARY;
const BEFORE = process.env.BENCH_BEFORE_BINARY;
const IDLE_SECONDS = 60;
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run ./build.sh first`);

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Resident memory in MB, all of it and the anonymous part (the rest is pages of the executable and libraries). */
const memoryOf = (pid: number) => {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(rollup)![1]);
  return { rss: kb('Rss') / 1024, anonymous: kb('Anonymous') / 1024 };
};
/** The watcher unit's Environment= assignments: the bench starts the executable with them, as systemd does. */
const UNIT_ENV: Record<string, string> = Object.fromEntries(
  readFileSync(path.join(REPO, 'systemd/sno-relocate-watch.service'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('Environment='))
    .flatMap((line) => line.slice('Environment='.length).trim().split(/\s+/))
    .map((assignment) => [assignment.slice(0, assignment.indexOf('=')), assignment.slice(assignment.indexOf('=') + 1)]),
);
/**
 * Drops a file's pages from the page cache (coreutils dd: fadvise DONTNEED on the whole file), so
 * the processes started next read the executable by their own page faults, as after a boot. A file
 * read whole just before (copied, checksummed) sits in the page cache in large folios, and the
 * kernel maps a whole folio into a process on one fault: the same idle watcher then shows about
 * 23 MB more pages of the executable (clean, shared, reclaimable), measured as its own row below.
 */
const dropFromPageCache = (file: string) =>
  execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
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
  const started = performance.now();
  await seedWatchedObjects(kc);
  const total = WATCHED_TOTAL;
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

  // the executable as the unit runs it (its Environment= too): start to first status file
  const startWatcher = async (binary: string, env: Record<string, string>) => {
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
      {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, ...env, JOURNAL_STREAM: '', INVOCATION_ID: '' },
      },
    );
    children.push(child);
    // the file exists from the first event on; the sync is done once it says healthy or not
    const evaluated = () =>
      existsSync(statusFile) &&
      (JSON.parse(readFileSync(statusFile, 'utf8')) as { health: string }).health !== 'unknown';
    await until(() => (evaluated() ? true : undefined), 60_000, 'the first evaluation in the status file');
    return { pid: child.pid!, statusFile, ms: performance.now() - t };
  };
  // three watchers, started one after another, then idle side by side
  dropFromPageCache(BINARY);
  if (BEFORE) dropFromPageCache(BEFORE);
  const watchers = [];
  for (let run = 0; run < 3; run++) watchers.push(await startWatcher(BINARY, UNIT_ENV));
  const firstStatus = watchers.map((w) => w.ms);
  const statusFile = watchers[0]!.statusFile;
  // an older build, idle beside these on the same cluster, as the earlier unit ran it (no
  // Environment= of its own): the before of a before/after
  const before = BEFORE ? await startWatcher(BEFORE, {}) : undefined;

  // idle: after the sync settles, RSS and CPU over 60 s, beside an idle node process
  const idleNode = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  children.push(idleNode);
  await wait(5000);
  const pids = watchers.map((w) => w.pid);
  const ticks0 = pids.map(cpuTicks);
  const nodeTicks0 = cpuTicks(idleNode.pid!);
  const rssSamples = pids.map((): number[] => []);
  const beforeSamples: number[] = [];
  for (let i = 0; i < IDLE_SECONDS / 5; i++) {
    await wait(5000);
    pids.forEach((pid, j) => rssSamples[j]!.push(memoryOf(pid).rss));
    if (before) beforeSamples.push(memoryOf(before.pid).rss);
  }
  const cpuPct = median(pids.map((pid, j) => ((cpuTicks(pid) - ticks0[j]!) / CLK_TCK / IDLE_SECONDS) * 100));
  const nodeCpuPct = ((cpuTicks(idleNode.pid!) - nodeTicks0) / CLK_TCK / IDLE_SECONDS) * 100;
  const rss = median(rssSamples.map(median));
  const parts = pids.map(memoryOf);
  const fileBacked = median(parts.map((m) => m.rss - m.anonymous));
  const node = memoryOf(idleNode.pid!);
  const beforeParts = before && memoryOf(before.pid);

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

  // the same executable read whole just before one more watcher starts (no other process maps it)
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
  dropFromPageCache(BINARY);
  readFileSync(BINARY);
  const readWhole = await startWatcher(BINARY, UNIT_ENV);
  await wait(15_000);
  const readWholeSamples: { rss: number; anonymous: number }[] = [];
  for (let i = 0; i < 6; i++) {
    await wait(5000);
    readWholeSamples.push(memoryOf(readWhole.pid));
  }
  const readWholeRss = median(readWholeSamples.map((m) => m.rss));
  const readWholeFile = median(readWholeSamples.map((m) => m.rss - m.anonymous));

  const unitEnv = Object.entries(UNIT_ENV)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  printTable(
    `watch with ${total} watched objects, ${BINARY} with ${unitEnv} (medians of 3 runs unless noted; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})`,
    [
      ['measure', 'value', 'target', 'baseline (same run)'],
      [
        'initial sync, in-process (ms)',
        median(syncMs),
        '< 5000',
        `kubectl get -A -o json of the same kinds: ${median(kubectlMs).toFixed(0)} ms (${(median(syncMs) / median(kubectlMs)).toFixed(2)}x)`,
      ],
      ['objects kept in memory (the others have nothing to report)', String(kept), '', `of ${total} watched`],
      [
        'executable start to first evaluation in the status file (ms)',
        median(firstStatus),
        '< 5000',
        `runs ${firstStatus.map((ms) => ms.toFixed(0)).join(', ')}${before ? `; ${BEFORE}, started after them: ${before.ms.toFixed(0)}` : ''}`,
      ],
      [
        `idle RSS over ${IDLE_SECONDS} s (MB; median of 3 watchers, each the median of ${rssSamples[0]!.length} samples)`,
        rss,
        '< 70',
        `idle node process: ${node.rss.toFixed(1)} MB (${(rss / node.rss).toFixed(2)}x)`,
      ],
      [
        '  of which pages of the executable and libraries (MB)',
        fileBacked,
        '',
        `idle node process: ${(node.rss - node.anonymous).toFixed(1)} MB`,
      ],
      [
        '  the same executable read whole just before it started (MB; one watcher, median of 6 samples)',
        readWholeRss,
        '',
        `of which pages of the executable and libraries: ${readWholeFile.toFixed(1)} MB`,
      ],
      ...(before && beforeParts
        ? [
            [
              `idle RSS of ${BEFORE}, alongside, no Environment= (MB)`,
              median(beforeSamples),
              '',
              `of which pages of the executable: ${(beforeParts.rss - beforeParts.anonymous).toFixed(1)} MB`,
            ],
          ]
        : []),
      [
        `idle CPU over ${IDLE_SECONDS} s (% of one core)`,
        cpuPct,
        '< 1',
        `idle node process: ${nodeCpuPct.toFixed(2)} %`,
      ],
      [
        'ClusterOperator Degraded to status file, median of 5 (ms)',
        median(latency),
        '< 1000',
        `max ${Math.max(...latency).toFixed(0)} ms`,
      ],
    ],
  );
  reportFigure({
    what: `watcher initial sync, ${total.toLocaleString('en')} watched objects`,
    target: '< 5 s',
    measured: `${(median(syncMs) / 1000).toFixed(1)} s in process; ${(median(firstStatus) / 1000).toFixed(1)} s from executable start to the status file`,
    baseline: `\`kubectl get -A -o json\` of the same kinds: ${(median(kubectlMs) / 1000).toFixed(1)} s (${(median(syncMs) / median(kubectlMs)).toFixed(2)}x)`,
  });
  reportFigure({
    what: `watcher idle RSS over ${IDLE_SECONDS} s, as the unit runs it`,
    target: '< 70 MB',
    measured: `${rss.toFixed(1)} MB, keeping ${kept} of the ${total.toLocaleString('en')} objects, ${fileBacked.toFixed(1)} MB of it pages of the executable and libraries; started right after its executable was read whole: ${readWholeRss.toFixed(1)} MB`,
    baseline: `idle Node process: ${node.rss.toFixed(1)} MB (${(node.rss - node.anonymous).toFixed(1)} MB of it pages of \`node\`)`,
  });
  reportFigure({
    what: `watcher idle CPU over ${IDLE_SECONDS} s`,
    target: '< 1% of a core',
    measured: `${cpuPct.toFixed(1)}%`,
  });
  reportFigure({
    what: 'ClusterOperator going Degraded to the status file',
    target: '< 1 s',
    measured: `${median(latency).toFixed(0)} ms`,
  });
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await cluster.stop();
}
