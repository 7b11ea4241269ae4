/**
 * `fleet status` over 200 clusters: 170 contexts on a real kube-apiserver holding a SiteRelocation,
 * 20 on servers that accept connections and never answer (each costs its timeout), 10 on ports
 * where nothing listens. The bounded pool (32 at once) against reading them one by one, in the
 * same run. Target: at most 1/8 of the one-by-one time.
 * `npx tsx bench/fleet-status.ts [runs]`
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { fleetStatus, kubeconfigsIn } from '../src/fleet/status.js';
import { publishReport } from '../src/hub/report.js';
import { connectKube } from '../src/kube/client.js';
import { createLogger } from '../src/log/logger.js';
import { systemClock } from '../src/ports/clock.js';
import { startCluster } from '../test/kube/cluster.js';
import { median, printTable } from './lib.js';
import { reportFigure } from './figures.js';

const runs = Number(process.argv[2] ?? 3);
const [LIVE, SILENT, STOPPED, TIMEOUT_MS] = [170, 20, 10, 2000];
const work = mkdtempSync(path.join(tmpdir(), 'bench-fleet-'));
const cluster = await startCluster();
const sockets: net.Socket[] = [];
const silent = net.createServer((s) => void sockets.push(s));
await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));

const fake = (file: string, port: number) =>
  writeFileSync(
    file,
    yaml.dump({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: `https://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );

try {
  const log = createLogger({ write: () => undefined, journal: false });
  const kube = await connectKube(cluster.kubeconfigPath, log);
  const now = new Date().toISOString();
  await publishReport(kube, systemClock, {
    site: 'store',
    phase: 'Succeeded',
    startedAt: now,
    steps: [],
    watcherErrorCount: 0,
    agentVersion: '0.1.0',
    updatedAt: now,
  });
  const dir = path.join(work, 'kubeconfigs');
  mkdirSync(dir);
  for (let i = 0; i < LIVE; i += 1) copyFileSync(cluster.kubeconfigPath, path.join(dir, `live-${i}.yaml`));
  for (let i = 0; i < SILENT; i += 1)
    fake(path.join(dir, `silent-${i}.yaml`), (silent.address() as net.AddressInfo).port);
  for (let i = 0; i < STOPPED; i += 1) fake(path.join(dir, `stopped-${i}.yaml`), 1 + i); // privileged ports: nothing listens
  const files = await kubeconfigsIn(dir);
  const time = async (concurrency: number) => {
    const started = performance.now();
    const lines = await fleetStatus(files, { concurrency, timeoutMs: TIMEOUT_MS, log });
    const unreachable = lines.filter((l) => l.state === 'unreachable').length;
    if (unreachable !== SILENT + STOPPED) throw new Error(`${unreachable} unreachable, expected ${SILENT + STOPPED}`);
    return performance.now() - started;
  };
  const pooled: number[] = [];
  const serial: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    pooled.push(await time(32));
    serial.push(await time(1));
  }
  const [p, s] = [median(pooled), median(serial)];
  printTable(
    `fleet status: ${files.length} clusters (${SILENT} silent, ${STOPPED} stopped, timeout ${TIMEOUT_MS / 1000} s), medians of ${runs} runs`,
    [
      ['what', 'median', 'ratio'],
      ['pool of 32', `${(p / 1000).toFixed(2)} s`, `${(p / s).toFixed(3)} of one by one (target <= 0.125)`],
      ['one by one', `${(s / 1000).toFixed(2)} s`, ''],
    ],
  );
  reportFigure({
    what: `\`fleet status\`, ${files.length} clusters: ${files.length - SILENT - STOPPED} answering, ${SILENT} silent, ${STOPPED} stopped, ${TIMEOUT_MS / 1000} s timeout`,
    target: '<= 1/8 of one by one',
    measured: `${(p / 1000).toFixed(2)} s with a pool of 32 (${(p / s).toFixed(3)} of one by one)`,
    baseline: `one by one: ${(s / 1000).toFixed(1)} s`,
  });
} finally {
  for (const s of sockets) s.destroy();
  silent.close();
  await cluster.stop();
  rmSync(work, { recursive: true, force: true });
}
