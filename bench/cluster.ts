/**
 * The cluster phase (csr-approval .. mirrors) on a seeded factory cluster with 1,000 extra routes
 * under the old apps domain, timed as the whole process (`sno-relocate run --only cluster --skip
 * health`, start to exit), each run on a freshly seeded cluster, two ways:
 *
 * - without the operator models: they settle the factory cluster (IngressController, canary, routes
 *   admitted) and stop before the run, and what the domain step then waits for (the operators' routes
 *   admitted on their new hosts) is seeded, so the process does its own work only, as the floor and
 *   kubectl do; this is the figure against both targets;
 * - with the operator models (test/cluster/models) at work: the same run also waits for the
 *   modelled kube-apiserver revisions and route admissions, as it would on a real cluster.
 *
 * Also the same run on a cluster with no extra route: the phase's fixed part (process start, the
 * other steps), and so what the routes add, against the floor.
 *
 * BENCH_MODELS=0 leaves out the run with the operator models (minutes at several thousand routes,
 * which the router model admits one by one), for a sweep of BENCH_ROUTES.
 *
 * Two baselines in the same run:
 *
 * - the floor: on the same API server right after each run, the same number of route merge patches
 *   (each route's host moved back) sent as raw keep-alive HTTPS, 32 at a time, through Node's https
 *   module: what the API server itself costs for the patches alone, with no client library and none
 *   of the other steps; the ratio to it is printed every run (target <= 1.3x);
 * - bench/cluster-baseline.sh doing the same work with one kubectl call per object (target: the
 *   agent at least 25x faster). Minutes a run, so by default it runs on a sample: on freshly seeded
 *   clusters with no extra routes and with BENCH_BASELINE_SAMPLE (default 100), and is extrapolated
 *   linearly to BENCH_ROUTES (fixed part + routes x the cost of one more route);
 *   BENCH_BASELINE=whole runs it on the whole cluster instead.
 *
 * Then the domain step's certificate set (site CA + apps wildcard, console, downloads, oauth and api)
 * three ways: node-forge alone with RSA keys, and the agent's issuer (@peculiar/x509) under a
 * P-256 CA of its own and under a site's RSA-2048 CA. Medians of BENCH_RUNS (default 3) runs.
 * BENCH_BINARY measures another build.
 *
 *   npx tsx bench/cluster.ts          (needs ./build.sh and scripts/ensure-kube-apiserver.sh once)
 */
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi } from '@kubernetes/client-node';
import forge from 'node-forge';
import pLimit from 'p-limit';
import { issue, newKey } from '../src/certs/issue.js';
import { startFactory, type ClusterEnv } from '../test/cluster/env.js';
import { FACTORY_APPS_DOMAIN, FACTORY_NODE_NAME } from '../test/kube/factory-cluster.js';
import { writeSiteFolder } from '../test/node/cli.js';
import { OPERATOR_ROUTES } from '../src/kube/openshift.js';
import { reportFigure } from './figures.js';
import { BENCH_BINARY, median } from './lib.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const ROUTES = Number(process.env.BENCH_ROUTES ?? 1000);
/** kubectl takes about half a second a call on a two-core machine: a whole baseline run is minutes long */
const BASELINE_WHOLE = process.env.BENCH_BASELINE === 'whole';
const BASELINE_SAMPLE = Number(process.env.BENCH_BASELINE_SAMPLE ?? 100);
const MODELS = process.env.BENCH_MODELS !== '0';
const FLOOR_CONCURRENCY = 32;
const NEW_APPS_DOMAIN = 'apps.sno.store42.example.com';
const here = path.dirname(fileURLToPath(import.meta.url));

interface Route {
  metadata: { name: string; namespace: string };
  spec: { host?: string };
}

/**
 * The floor: a merge patch of spec.host for each route under `from`, moving it under `to`, as raw
 * keep-alive HTTPS requests (the kubeconfig's CA and bearer token), FLOOR_CONCURRENCY at a time.
 */
async function rawPatches(env: ClusterEnv, from: string, to: string): Promise<{ ms: number; patches: number }> {
  const kc = env.cluster.kubeConfig();
  const listed = (await kc.makeApiClient(CustomObjectsApi).listCustomObjectForAllNamespaces({
    group: 'route.openshift.io',
    version: 'v1',
    plural: 'routes',
  })) as { items: Route[] };
  const routes = listed.items.filter((r) => r.spec.host?.endsWith(`.${from}`));
  const cluster = kc.getCurrentCluster()!;
  const server = new URL(cluster.server);
  const agent = new https.Agent({ keepAlive: true, ca: Buffer.from(cluster.caData!, 'base64') });
  const token = kc.getCurrentUser()!.token!;
  const patch = (r: Route) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify({ spec: { host: `${r.spec.host!.slice(0, -from.length)}${to}` } });
      const req = https.request(
        {
          agent,
          host: server.hostname,
          port: server.port,
          method: 'PATCH',
          path: `/apis/route.openshift.io/v1/namespaces/${r.metadata.namespace}/routes/${r.metadata.name}`,
          headers: {
            authorization: `Bearer ${token}`,
            accept: 'application/json',
            'content-type': 'application/merge-patch+json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`patch: ${res.statusCode}`))));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const limit = pLimit(FLOOR_CONCURRENCY);
  const t = performance.now();
  await Promise.all(routes.map((r) => limit(() => patch(r))));
  const ms = performance.now() - t;
  agent.destroy();
  return { ms, patches: routes.length };
}

interface AgentRun {
  processMs: number;
  /** each step's duration, from its log line */
  steps: Record<string, number>;
  /** from spawning the process to its first log line */
  startMs: number;
  floorMs: number;
  patches: number;
}

/**
 * What the domain step waits for when no operator models run: the operators' routes admitted on
 * their hosts under the new apps domain, as the router would report them once the operators moved
 * them (test/cluster/models/router.ts writes the same status).
 */
async function admitOperatorRoutes(env: ClusterEnv): Promise<void> {
  const custom = env.cluster.kubeConfig().makeApiClient(CustomObjectsApi);
  for (const r of OPERATOR_ROUTES) {
    if (!r.host) continue;
    const host = `${r.host}.${NEW_APPS_DOMAIN}`;
    await custom.patchNamespacedCustomObjectStatus({
      group: 'route.openshift.io',
      version: 'v1',
      plural: 'routes',
      namespace: r.namespace,
      name: r.name,
      body: [
        {
          op: 'add',
          path: '/status',
          value: {
            ingress: [{ host, routerName: 'default', conditions: [{ type: 'Admitted', status: 'True' }] }],
          },
        },
      ],
    });
  }
}

/** The executable's cluster phase on a freshly seeded cluster, then the floor on the same API server. */
async function agentOnce(models: boolean, routes = ROUTES): Promise<AgentRun> {
  // the models make the factory cluster's operator objects (IngressController, canary, route status)
  const env = await startFactory({ seed: { extraRoutes: routes }, settleTimeoutMs: 600_000 });
  if (!models) {
    await env.models!.stop();
    await admitOperatorRoutes(env);
  }
  const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-bench-cluster-'));
  try {
    const dir = writeSiteFolder(path.join(root, 'stick'), 'store-0042', {
      baseDomain: 'store42.example.com',
      hostname: FACTORY_NODE_NAME,
      network: { nmstate: { interfaces: [] }, internalIP: '192.168.127.10/24' },
      pullSecret: {
        auths: { 'registry.store42.example.com:5000': { auth: Buffer.from('store:store').toString('base64') } },
      },
      imageDigestMirrors: [
        {
          source: 'quay.io/openshift-release-dev/ocp-release',
          mirrors: ['registry.store42.example.com:5000/ocp/release'],
        },
      ],
    });
    const argv = ['run', dir, '--only', 'cluster', '--skip', 'health', '--root', root];
    const spawnedAt = Date.now();
    const t = performance.now();
    // not spawnSync: the OpenShift operator models run in this process and must keep reconciling
    const r = await new Promise<{ status: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(
        BENCH_BINARY,
        [...argv, '--kubeconfig', env.cluster.kubeconfigPath, '--log-format', 'json', '--log-level', 'info'],
        { env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '' }, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, stderr }));
    });
    const processMs = performance.now() - t;
    if (r.status !== 0) throw new Error(`sno-relocate run: exit ${r.status}: ${r.stderr.slice(-2000)}`);
    const lines = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { time?: string; step?: string; event?: string; durationMs?: number });
    const steps: Record<string, number> = {};
    for (const e of lines)
      if (e.step && (e.event === 'stepFinished' || e.event === 'stepSkipped')) steps[e.step] = e.durationMs ?? NaN;
    const startMs = lines[0]?.time ? Date.parse(lines[0].time) - spawnedAt : NaN;
    const floor = await rawPatches(env, NEW_APPS_DOMAIN, FACTORY_APPS_DOMAIN);
    return { processMs, steps, startMs, floorMs: floor.ms, patches: floor.patches };
  } finally {
    await env.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The same work with one kubectl call per object, on its own freshly seeded cluster. */
async function baselineOnce(routes: number): Promise<number> {
  const env = await startFactory({ seed: { extraRoutes: routes }, models: false });
  try {
    const t = performance.now();
    execFileSync(
      'bash',
      [
        path.join(here, 'cluster-baseline.sh'),
        env.cluster.kubeconfigPath,
        FACTORY_APPS_DOMAIN,
        NEW_APPS_DOMAIN,
        'api.sno.store42.example.com',
      ],
      { stdio: 'inherit' },
    );
    return performance.now() - t;
  } finally {
    await env.stop();
  }
}

const CERT_NAMES = [
  '*.apps.sno.store42.example.com',
  'console-openshift-console.apps.sno.store42.example.com',
  'downloads-openshift-console.apps.sno.store42.example.com',
  'oauth-openshift.apps.sno.store42.example.com',
  'api.sno.store42.example.com',
];

async function certSets(): Promise<Record<string, number>> {
  const notBefore = new Date();
  const time = async (fn: () => unknown) => {
    const t = performance.now();
    await fn();
    return performance.now() - t;
  };
  const forgeRsa = () => {
    // node-forge alone: RSA keys from native crypto (as forge does), signatures in JavaScript
    const rsa = () => {
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const key = forge.pki.privateKeyFromPem(
        privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
      ) as forge.pki.rsa.PrivateKey;
      return { key, pub: forge.pki.setRsaPublicKey(key.n, key.e) };
    };
    const ca = rsa();
    for (const cn of ['site CA', ...CERT_NAMES]) {
      const leaf = cn === 'site CA' ? ca : rsa();
      const cert = forge.pki.createCertificate();
      cert.publicKey = leaf.pub;
      cert.serialNumber = '01';
      cert.validity.notBefore = notBefore;
      cert.validity.notAfter = new Date(notBefore.getTime() + 86_400_000);
      cert.setSubject([{ name: 'commonName', value: cn }]);
      cert.setIssuer([{ name: 'commonName', value: 'site CA' }]);
      cert.sign(ca.key, forge.md.sha256.create());
    }
  };
  // the library the agent issues with: P-256 leaves under a P-256 CA, and under a site's RSA-2048 CA
  const peculiar = async (caKey = newKey()) => {
    const caPem = await issue({ commonName: 'site CA', isCA: true, notBefore, validityDays: 3650 }, caKey);
    const ca = { cert: new X509Certificate(caPem), key: caKey, chain: [] };
    for (const n of CERT_NAMES)
      await issue({ commonName: n, dnsNames: [n], notBefore, validityDays: 730 }, newKey(), ca);
  };
  const rsaCa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const samples = async (fn: () => unknown) => {
    const runs: number[] = [];
    for (let i = 0; i < RUNS; i++) runs.push(await time(fn));
    return median(runs);
  };
  return {
    'node-forge, RSA-2048 (forge signs)': await samples(forgeRsa),
    '@peculiar/x509, P-256 CA (agent-made, chosen)': await samples(() => peculiar()),
    '@peculiar/x509, RSA-2048 site CA, P-256 leaves': await samples(() => peculiar(rsaCa)),
  };
}

const rows: string[][] = [];
const without: AgentRun[] = [];
const withModels: AgentRun[] = [];
const noExtraRoutes: AgentRun[] = [];
const ratioOf = (r: AgentRun) => r.processMs / r.floorMs;
for (let i = 0; i < RUNS; i++) {
  const run = await agentOnce(false);
  without.push(run);
  const stepList = Object.entries(run.steps)
    .map(([name, ms]) => `${name} ${ms}`)
    .join(', ');
  const inSteps = Object.values(run.steps).reduce((a, b) => a + b, 0);
  console.log(
    `run ${i + 1}, no models: process ${run.processMs.toFixed(0)} ms (start to first log line ${run.startMs} ms; ` +
      `steps ${inSteps} ms: ${stepList}), floor ${run.floorMs.toFixed(0)} ms for ${run.patches} patches: ` +
      `${ratioOf(run).toFixed(2)}x`,
  );
  const fixed = await agentOnce(false, 0);
  noExtraRoutes.push(fixed);
  console.log(`run ${i + 1}, no models, no extra route: process ${fixed.processMs.toFixed(0)} ms`);
  if (!MODELS) continue;
  const modelled = await agentOnce(true);
  withModels.push(modelled);
  console.log(
    `run ${i + 1}, operator models at work: process ${modelled.processMs.toFixed(0)} ms (domain ${modelled.steps.domain} ms, ` +
      `access ${modelled.steps.access} ms), floor ${modelled.floorMs.toFixed(0)} ms: ${ratioOf(modelled).toFixed(2)}x`,
  );
}
// kubectl: whole, or fixed part and per-route cost from two freshly seeded clusters
let baselineMs: number;
let baselineHow: string;
if (BASELINE_WHOLE) {
  baselineMs = await baselineOnce(ROUTES);
  baselineHow = `kubectl per object, whole (${ROUTES} extra routes)`;
} else {
  const none = await baselineOnce(0);
  const sample = await baselineOnce(BASELINE_SAMPLE);
  const perRoute = (sample - none) / BASELINE_SAMPLE;
  baselineMs = none + perRoute * ROUTES;
  baselineHow =
    `kubectl per object, extrapolated: ${none.toFixed(0)} ms with no extra route + ${ROUTES} x ${perRoute.toFixed(0)} ms ` +
    `(from ${BASELINE_SAMPLE} extra routes: ${sample.toFixed(0)} ms)`;
}
const processMs = median(without.map((r) => r.processMs));
const ratio = median(without.map(ratioOf));
const stepNames = Object.keys(without[0]!.steps);
rows.push([
  `cluster phase, ${ROUTES} extra routes, whole process, no operator models (what domain waits for seeded)`,
  processMs.toFixed(0),
  `${ratio.toFixed(2)}x the floor`,
  ratio <= 1.3 ? '<= 1.3x the floor: yes' : '<= 1.3x the floor: NO',
]);
rows.push(['  start to first log line', median(without.map((r) => r.startMs)).toFixed(0), '', '']);
for (const name of stepNames)
  rows.push([`  step ${name}`, median(without.map((r) => r.steps[name] ?? NaN)).toFixed(0), '', '']);
rows.push([
  `floor: ${without[0]!.patches} route merge patches, raw keep-alive HTTPS, ${FLOOR_CONCURRENCY} at a time`,
  median(without.map((r) => r.floorMs)).toFixed(0),
  'baseline',
  '',
]);
// what the extra routes add to the process, against what the same patches cost raw
const fixedMs = median(noExtraRoutes.map((r) => r.processMs));
const floorMs = median(without.map((r) => r.floorMs));
rows.push(["the same with no extra route (the phase's fixed part)", fixedMs.toFixed(0), '', '']);
rows.push([
  `what the ${ROUTES} extra routes add (${processMs.toFixed(0)} - ${fixedMs.toFixed(0)} ms)`,
  (processMs - fixedMs).toFixed(0),
  `${((processMs - fixedMs) / floorMs).toFixed(2)}x the floor`,
  '',
]);
if (MODELS)
  rows.push([
    'the same with the operator models at work (roll-outs waited for)',
    median(withModels.map((r) => r.processMs)).toFixed(0),
    `${median(withModels.map(ratioOf)).toFixed(2)}x its floor`,
    `floor ${median(withModels.map((r) => r.floorMs)).toFixed(0)} ms`,
  ]);
rows.push([
  baselineHow,
  baselineMs.toFixed(0),
  `sno-relocate ${(baselineMs / processMs).toFixed(1)}x faster`,
  baselineMs / processMs >= 25 ? '>= 25x: yes' : '>= 25x: NO',
]);
const certs = await certSets();
const base = certs['node-forge, RSA-2048 (forge signs)']!;
for (const [name, ms] of Object.entries(certs))
  rows.push([
    `certificate set (CA + ${CERT_NAMES.length}): ${name}`,
    ms.toFixed(1),
    `${(base / ms).toFixed(1)}x`,
    ms < 500 ? 'under 0.5 s: yes' : 'under 0.5 s: NO',
  ]);
const width = [0, 1, 2, 3].map((i) =>
  Math.max(...rows.map((r) => r[i]!.length), ['what', 'median ms', 'ratio', 'target'][i]!.length),
);
const line = (r: string[]) => r.map((c, i) => c.padEnd(width[i]!)).join('  ');
console.log(
  `${BENCH_BINARY}: medians of ${RUNS} runs; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
);
console.log(line(['what', 'median ms', 'ratio', 'target']));
for (const r of rows) console.log(line(r));
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
reportFigure({
  what: `cluster phase, ${ROUTES.toLocaleString('en')} extra routes${MODELS ? ', whole process from start to exit' : ` (\`BENCH_ROUTES=${ROUTES} BENCH_MODELS=0\`)`}`,
  target: '<= 1.3x the floor, >= 25x kubectl',
  measured:
    `${seconds(processMs)}, ${ratio.toFixed(2)}x the floor${ratio <= 1.3 ? '' : ' (over target)'}: start to first log line ` +
    `${seconds(median(without.map((r) => r.startMs)))}, ${stepNames.map((n) => `${n} ${median(without.map((r) => r.steps[n] ?? NaN)).toFixed(0)} ms`).join(', ')}`,
  baseline:
    `floor: the same ${without[0]!.patches} route merge patches as raw keep-alive HTTPS, ${FLOOR_CONCURRENCY} at a time, ${seconds(floorMs)}; ` +
    `kubectl per object${BASELINE_WHOLE ? '' : ', extrapolated'}: ${(baselineMs / 1000).toFixed(0)} s (${(baselineMs / processMs).toFixed(0)}x)`,
});
reportFigure({ what: 'cluster phase, no extra route (its fixed part)', measured: seconds(fixedMs) });
if (MODELS)
  reportFigure({
    what: 'cluster phase with the operator models at work (their roll-outs waited for)',
    measured: seconds(median(withModels.map((r) => r.processMs))),
  });
reportFigure({
  what: 'certificate set: site CA + 5 serving certificates',
  target: '< 0.5 s',
  measured: `${Object.entries(certs)
    .filter(([name]) => name !== 'node-forge, RSA-2048 (forge signs)')
    .map(([name, ms]) => `${ms.toFixed(1)} ms, ${name}`)
    .join('; ')}`,
  baseline: `node-forge RSA-2048: ${base.toFixed(0)} ms`,
});
