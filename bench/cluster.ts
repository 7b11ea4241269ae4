/**
 * The cluster phase (csr-approval .. mirrors) on a seeded factory cluster with 1,000 extra routes
 * under the old apps domain, timed as the whole process (`sno-relocate run --only cluster --skip
 * health`, start to exit), each run on a freshly seeded cluster. Two baselines in the same run:
 *
 * - the floor: on the same API server right after the run, the same number of route merge patches
 *   (each route's host moved back) sent as raw keep-alive HTTPS, 32 at a time, through Node's https
 *   module: what the API server itself costs for the patches alone, with no client library and none
 *   of the other steps; the ratio to it is printed every run (target <= 1.3x);
 * - bench/cluster-baseline.sh doing the same work with one kubectl call per object, on its own
 *   freshly seeded cluster (target: the agent at least 25x faster).
 *
 * Then the domain step's certificate set (site CA + apps wildcard, console, downloads, oauth and api)
 * two ways. Medians of BENCH_RUNS (default 3) runs; the kubectl baseline, minutes a run,
 * BENCH_BASELINE_RUNS (default 1) runs. BENCH_BINARY measures another build.
 *
 *   npx tsx bench/cluster.ts          (needs ./build.sh and scripts/ensure-kube-apiserver.sh once)
 */
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi } from '@kubernetes/client-node';
import forge from 'node-forge';
import pLimit from 'p-limit';
import { issue, newKey } from '../src/certs/x509.js';
import { startFactory, type ClusterEnv } from '../test/cluster/env.js';
import { FACTORY_APPS_DOMAIN, FACTORY_NODE_NAME } from '../test/kube/factory-cluster.js';
import { writeSiteFolder } from '../test/node/cli.js';
import { BENCH_BINARY, median } from './lib.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const ROUTES = Number(process.env.BENCH_ROUTES ?? 1000);
/** kubectl takes about half a second a call on a two-core machine, so one baseline run is minutes long */
const BASELINE_RUNS = Number(process.env.BENCH_BASELINE_RUNS ?? 1);
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
  routesStepMs: number;
  floorMs: number;
  patches: number;
}

/** The executable's cluster phase on a freshly seeded cluster, then the floor on the same API server. */
async function agentOnce(): Promise<AgentRun> {
  const env = await startFactory({ seed: { extraRoutes: ROUTES } });
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
    const finished = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { step?: string; event?: string; durationMs?: number })
      .find((e) => e.step === 'routes' && typeof e.durationMs === 'number');
    const floor = await rawPatches(env, NEW_APPS_DOMAIN, FACTORY_APPS_DOMAIN);
    return { processMs, routesStepMs: finished?.durationMs ?? NaN, floorMs: floor.ms, patches: floor.patches };
  } finally {
    await env.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The same work with one kubectl call per object, on its own freshly seeded cluster. */
async function baselineOnce(): Promise<number> {
  const env = await startFactory({ seed: { extraRoutes: ROUTES } });
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

function certSets(): Record<string, number> {
  const notBefore = new Date();
  const time = (fn: () => void) => {
    const t = performance.now();
    fn();
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
  const nodeP256 = () => {
    const caKey = newKey();
    const caPem = issue({ commonName: 'site CA', isCA: true, notBefore, validityDays: 3650 }, caKey);
    const ca = { cert: new X509Certificate(caPem), key: caKey };
    for (const n of CERT_NAMES) issue({ commonName: n, dnsNames: [n], notBefore, validityDays: 730 }, newKey(), ca);
  };
  const samples = (fn: () => void) => median(Array.from({ length: RUNS }, () => time(fn)));
  return {
    'node-forge, RSA-2048 (forge signs)': samples(forgeRsa),
    'P-256, node:crypto signs (chosen)': samples(nodeP256),
  };
}

const rows: string[][] = [];
const runs: AgentRun[] = [];
for (let i = 0; i < RUNS; i++) {
  const run = await agentOnce();
  runs.push(run);
  console.log(
    `run ${i + 1}: process ${run.processMs.toFixed(0)} ms (routes step ${run.routesStepMs} ms), ` +
      `floor ${run.floorMs.toFixed(0)} ms for ${run.patches} patches: ${(run.processMs / run.floorMs).toFixed(2)}x`,
  );
}
const baselineRuns: number[] = [];
for (let i = 0; i < BASELINE_RUNS; i++) baselineRuns.push(await baselineOnce());
const processMs = median(runs.map((r) => r.processMs));
const floorMs = median(runs.map((r) => r.floorMs));
const ratio = median(runs.map((r) => r.processMs / r.floorMs));
const baselineMs = median(baselineRuns);
rows.push([
  `cluster phase, ${ROUTES} extra routes: sno-relocate, whole process`,
  processMs.toFixed(0),
  `${ratio.toFixed(2)}x the floor`,
  ratio <= 1.3 ? '<= 1.3x the floor: yes' : '<= 1.3x the floor: NO',
]);
rows.push(['  of which the routes step', median(runs.map((r) => r.routesStepMs)).toFixed(0), '', '']);
rows.push([
  `floor: ${runs[0]!.patches} route merge patches, raw keep-alive HTTPS, ${FLOOR_CONCURRENCY} at a time`,
  floorMs.toFixed(0),
  'baseline',
  '',
]);
if (BASELINE_RUNS > 0)
  rows.push([
    `kubectl per object (${BASELINE_RUNS} run${BASELINE_RUNS === 1 ? '' : 's'})`,
    baselineMs.toFixed(0),
    `sno-relocate ${(baselineMs / processMs).toFixed(1)}x faster`,
    baselineMs / processMs >= 25 ? '>= 25x: yes' : '>= 25x: NO',
  ]);
const certs = certSets();
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
console.log(`${BENCH_BINARY}: median of ${RUNS} runs (kubectl baseline: ${BASELINE_RUNS})`);
console.log(line(['what', 'median ms', 'ratio', 'target']));
for (const r of rows) console.log(line(r));
