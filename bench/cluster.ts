/**
 * The cluster phase (csr-approval .. mirrors) on a seeded factory cluster with 1,000 extra routes
 * under the old apps domain, against bench/cluster-baseline.sh doing the same work with one kubectl
 * call per object, measured in the same run on the same kind of cluster (each run on a freshly
 * seeded one). Then the domain step's certificate set (site CA + apps wildcard, console, downloads,
 * oauth and api) two ways. Medians of BENCH_RUNS (default 5) runs; the baseline, minutes a run,
 * BENCH_BASELINE_RUNS (default 1) runs.
 *
 *   npx tsx bench/cluster.ts          (needs scripts/ensure-kube-apiserver.sh once)
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import forge from 'node-forge';
import { issue, newKey } from '../src/certs/x509.js';
import { agent, startFactory, storeSite } from '../test/cluster/env.js';
import { FACTORY_APPS_DOMAIN } from '../test/kube/factory-cluster.js';
import { median } from './lib.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ROUTES = Number(process.env.BENCH_ROUTES ?? 1000);
/** kubectl takes about half a second a call on a two-core machine, so one baseline run is minutes long */
const BASELINE_RUNS = Number(process.env.BENCH_BASELINE_RUNS ?? 1);
const here = path.dirname(fileURLToPath(import.meta.url));

/** The agent's cluster phase on a freshly seeded cluster. */
async function agentOnce(): Promise<number> {
  const env = await startFactory({ seed: { extraRoutes: ROUTES } });
  try {
    const a = await agent(env, storeSite());
    const t = performance.now();
    const state = await a.run();
    const ms = performance.now() - t;
    if (state.result !== 'succeeded') throw new Error(`agent run ${state.result}`);
    return ms;
  } finally {
    await env.stop();
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
        'apps.sno.store42.example.com',
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
const agentRuns: number[] = [];
for (let i = 0; i < RUNS; i++) agentRuns.push(await agentOnce());
const baselineRuns: number[] = [];
for (let i = 0; i < BASELINE_RUNS; i++) baselineRuns.push(await baselineOnce());
const agentMs = median(agentRuns);
const baselineMs = median(baselineRuns);
rows.push([
  `cluster phase, ${ROUTES} extra routes: sno-relocate`,
  agentMs.toFixed(0),
  `${(baselineMs / agentMs).toFixed(1)}x faster`,
  agentMs < 3000 ? 'under 3 s: yes' : 'under 3 s: NO',
]);
rows.push([
  `cluster phase, ${ROUTES} extra routes: kubectl per object (${BASELINE_RUNS} run${BASELINE_RUNS === 1 ? '' : 's'})`,
  baselineMs.toFixed(0),
  'baseline',
  '',
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
console.log(`median of ${RUNS} runs (baseline: ${BASELINE_RUNS})`);
console.log(line(['what', 'median ms', 'ratio', 'target']));
for (const r of rows) console.log(line(r));
