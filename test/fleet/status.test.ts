/**
 * `fleet status` through the built executable against a real kube-apiserver holding a
 * SiteRelocation, an API without one, a server that accepts connections and never answers, and a
 * port where nothing listens: one line each, the stopped ones unreachable within their timeout. An
 * API that has just started (a bare `404 page not found` for a while, then the real server) is
 * waited out, its outage said on stderr as the agent says its own.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSite } from '../../src/fleet/status.js';
import { publishReport, type ReportStatus } from '../../src/hub/report.js';
import { connectKube } from '../../src/kube/client.js';
import { createLogger } from '../../src/log/logger.js';
import { systemClock } from '../../src/ports/clock.js';
import { runCli, runCliAsync } from '../helpers/cli.js';
import { opensslSelfSigned } from '../helpers/openssl.js';
import { missingBinaries, startCluster, type TestCluster } from '../kube/cluster.js';

const skip = missingBinaries().length > 0;
let cluster: TestCluster;
let bare: TestCluster;
let work: string;
let silent: net.Server;
let starting: https.Server;
const waking: https.Server[] = [];
const sockets: net.Socket[] = [];

/** A kubeconfig for a server that is no real cluster. */
function fakeKubeconfig(file: string, server: string): void {
  writeFileSync(
    file,
    yaml.dump({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 'not-a-real-token' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
}

beforeAll(async () => {
  if (skip) return;
  [cluster, bare] = await Promise.all([startCluster(), startCluster()]);
  const kube = await connectKube(cluster.kubeconfigPath, createLogger({ write: () => undefined, journal: false }));
  const status: ReportStatus = {
    site: 'store-0042',
    phase: 'Running',
    currentStep: 'routes',
    startedAt: new Date().toISOString(),
    steps: [],
    watcherErrorCount: 2,
    agentVersion: '0.1.0',
    updatedAt: new Date().toISOString(),
  };
  await publishReport(kube, systemClock, status);
  // accepts the connection, then says nothing: a stopped API behind a live load balancer
  silent = net.createServer((s) => void sockets.push(s));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const closedPort = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));

  work = mkdtempSync(path.join(tmpdir(), 'fleet-status-'));
  const dir = path.join(work, 'kubeconfigs');
  mkdirSync(dir);
  copyFileSync(cluster.kubeconfigPath, path.join(dir, 'store-0042.yaml'));
  copyFileSync(bare.kubeconfigPath, path.join(dir, 'store-0043.yaml'));
  fakeKubeconfig(path.join(dir, 'store-0044.yaml'), `https://127.0.0.1:${(silent.address() as net.AddressInfo).port}`);
  fakeKubeconfig(path.join(dir, 'store-0045.yaml'), `https://127.0.0.1:${closedPort}`);

  // answers its first request 503 (an API server starting), then nothing more
  const { crt, key } = opensslSelfSigned(work, 'starting', { subject: '/CN=127.0.0.1', days: 1 });
  let answered = false;
  starting = https.createServer({ cert: readFileSync(crt), key: readFileSync(key) }, (_req, res) => {
    if (answered) return;
    answered = true;
    res.writeHead(503, { 'content-type': 'text/plain' }).end('the server is starting\n');
  });
  await new Promise<void>((resolve) => starting.listen(0, '127.0.0.1', resolve));
  fakeKubeconfig(path.join(work, 'starting.yaml'), `https://127.0.0.1:${(starting.address() as net.AddressInfo).port}`);

  // a site whose API answers a bare 404 for its first requests, then is the real one; and one that never stops
  mkdirSync(path.join(work, 'waking'));
  for (const [name, notFound] of [
    ['store-0046', 6],
    ['store-0047', Infinity],
  ] as const) {
    const server = wakingApi({ cert: readFileSync(crt), key: readFileSync(key) }, notFound);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    waking.push(server);
    const url = `https://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    fakeKubeconfig(path.join(work, 'waking', `${name}.yaml`), url);
    const file = path.join(work, 'waking', `${name}.yaml`);
    writeFileSync(file, readFileSync(file, 'utf8').replace('not-a-real-token', cluster.token));
  }
}, 120_000);

/**
 * An API server that has just started: `404 page not found` as plain text (as a server answers
 * before it serves its paths) for its first `notFound` requests, then the test cluster's answers.
 */
function wakingApi(tls: { cert: Buffer; key: Buffer }, notFound: number): https.Server {
  let seen = 0;
  const upstream = new URL(cluster.server);
  const ca = readFileSync(cluster.caPath);
  return https.createServer(tls, (req, res) => {
    if (seen++ < notFound) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
      return;
    }
    const forward = https.request(
      new URL(req.url!, upstream),
      { method: req.method, headers: { ...req.headers, host: upstream.host }, ca },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(forward);
  });
}

afterAll(async () => {
  for (const s of sockets) s.destroy();
  silent?.close();
  for (const server of [starting, ...waking]) {
    server?.closeAllConnections();
    server?.close();
  }
  await Promise.all([cluster?.stop(), bare?.stop()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(skip)('fleet status', () => {
  it('prints one line per cluster and the totals; a stopped one is unreachable, never a hang', () => {
    const result = runCli(['fleet', 'status', '--kubeconfigs', path.join(work, 'kubeconfigs'), '--timeout', '2'], {
      timeoutMs: 20_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(/^CLUSTER\s+SITE\s+PHASE\s+STEP\s+WATCHER ERRORS\s+UPDATED \/ REASON$/);
    expect(lines.find((l) => l.startsWith('store-0042'))).toMatch(/store-0042\s+store-0042\s+Running\s+routes\s+2\s/);
    expect(lines.find((l) => l.startsWith('store-0043'))).toMatch(/no report\s+the agent has not written/);
    expect(lines.find((l) => l.startsWith('store-0044'))).toMatch(/unreachable\s+no answer from the API within 2 s/);
    expect(lines.find((l) => l.startsWith('store-0045'))).toMatch(/unreachable\s+.*ECONNREFUSED/);
    expect(result.stdout).toContain('4 cluster(s): 1 Running, 1 no report, 2 unreachable');
  });

  it('gives the same as JSON, with each read bounded by its timeout', () => {
    const result = runCli(
      ['fleet', 'status', '--kubeconfigs', path.join(work, 'kubeconfigs'), '--timeout', '1', '-o', 'json'],
      {
        timeoutMs: 20_000,
      },
    );
    const out = JSON.parse(result.stdout) as { clusters: { name: string; state: string; durationMs: number }[] };
    expect(out.clusters.map((c) => [c.name, c.state])).toEqual([
      ['store-0042', 'reported'],
      ['store-0043', 'no report'],
      ['store-0044', 'unreachable'],
      ['store-0045', 'unreachable'],
    ]);
    expect(out.clusters[2]!.durationMs).toBeLessThan(3000);
  });

  it('names the whole timeout when an API answers 503 and then nothing, not what its last attempt had left', async () => {
    const log = createLogger({ write: () => undefined, journal: false });
    const line = await readSite(path.join(work, 'starting.yaml'), 1_000, log);
    expect(line.state).toBe('unreachable');
    expect(line.error).toBe(
      'no answer from the API within 1 s (GET /apis/sno-relocate.openshift.io/v1alpha1/siterelocations/sno-relocate)',
    );
  });

  it('waits out an API answering a bare 404 for a while, saying when the outage starts and ends, as the agent does', async () => {
    const result = await runCliAsync(['fleet', 'status', '--kubeconfigs', path.join(work, 'waking'), '--timeout', '4']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines.find((l) => l.startsWith('store-0046'))).toMatch(/store-0046\s+store-0042\s+Running\s+routes\s/);
    expect(lines.find((l) => l.startsWith('store-0047'))).toMatch(/unreachable\s+HTTP 404: 404 page not found/);
    const said = (cluster: string) => result.stderr.split('\n').filter((l) => l.includes(`cluster=${cluster}`));
    const away =
      /WARN {2}the API is away \(HTTP 404: 404 page not found \(the path is not served yet\)\) at read the SiteRelocation of store-004\d: retrying for up to [1-4] s /;
    expect(said('store-0046')).toEqual([
      expect.stringMatching(away),
      expect.stringMatching(
        /INFO {2}the API answers again after \d+ s cluster=store-0046 outageSeconds=\d+ retries=\d+/,
      ),
    ]);
    expect(said('store-0047')).toEqual([
      expect.stringMatching(away),
      expect.stringMatching(
        /WARN {2}the API is still away after \d+ s: read the SiteRelocation of store-0047 gives up cluster=store-0047 outageSeconds=\d+ retries=\d+ reason="HTTP 404/,
      ),
    ]);
  });
});
