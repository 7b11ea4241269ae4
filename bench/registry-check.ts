/**
 * The registry check of 1,000 image digests against a local site registry (Debian's
 * docker-registry, TLS from a site CA, htpasswd), as registry-check runs it (its requests at a time,
 * each authenticated and verified), against the same 1,000 manifest requests made by curl in
 * sequence (one curl, the URLs one after another on one connection) in the same run. Median of
 * five runs each. `npx tsx bench/registry-check.ts [images] [runs]`
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import pLimit from 'p-limit';
import { checkImages } from '../src/registry/check.js';
import { REGISTRY_CHECK_CONCURRENCY as CONCURRENCY } from '../src/steps/registry-check.js';
import { RegistryClient } from '../src/registry/client.js';
import { Pusher } from '../test/registry/push.js';
import { REGISTRY_PASSWORD, REGISTRY_USER, startSiteRegistry } from '../test/registry/site-registry.js';
import { median, printTable } from './lib.js';
import { reportFigure } from './figures.js';

const count = Number(process.argv[2] ?? 1000);
const runs = Number(process.argv[3] ?? 5);
const SOURCE = 'quay.io/openshift-release-dev/ocp-v4.0-art-dev';

const registry = await startSiteRegistry();
const work = mkdtempSync(path.join(tmpdir(), 'bench-registry-'));
try {
  const pusher = new Pusher(registry);
  const push = pLimit(8);
  const digests = await Promise.all(
    Array.from({ length: count }, (_, i) => push(() => pusher.image('ocp/art', `component ${i}`))),
  ).finally(() => pusher.close());
  const images = digests.map((d) => ({ image: `${SOURCE}@${d}`, role: 'payload' as const, users: ['bench'] }));

  const check = async (): Promise<number> => {
    const client = new RegistryClient({
      auths: { [registry.host]: { auth: registry.auth } },
      caPem: registry.caPem,
      requestTimeoutMs: 10_000,
      maxSockets: CONCURRENCY,
    });
    const began = performance.now();
    const report = await checkImages({
      images,
      digestMirrors: [
        { source: SOURCE, mirrors: [`${registry.host}/ocp/art`], mirrorSourcePolicy: 'NeverContactSource' },
      ],
      tagMirrors: [],
      client,
      concurrency: CONCURRENCY,
      timeoutSeconds: 300,
      monotonic: () => performance.now(),
    });
    const ms = performance.now() - began;
    client.close();
    const present = report.results.filter((r) => r.status === 'present').length;
    if (present !== count) throw new Error(`registry check: ${present} of ${count} present`);
    return ms;
  };

  const ca = path.join(work, 'ca.crt');
  writeFileSync(ca, registry.caPem);
  const config = path.join(work, 'curl.conf');
  writeFileSync(
    config,
    [
      `user = "${REGISTRY_USER}:${REGISTRY_PASSWORD}"`,
      `cacert = "${ca}"`,
      'head',
      'silent',
      `header = "Accept: application/vnd.oci.image.manifest.v1+json"`,
      ...digests.flatMap((d) => [`url = "https://${registry.host}/v2/ocp/art/manifests/${d}"`, 'output = /dev/null']),
      '',
    ].join('\n'),
  );
  // asynchronous: the registry's log goes through this process, which must go on reading it
  const curl = async (): Promise<number> => {
    const began = performance.now();
    const r = await promisify(execFile)('curl', ['--config', config, '--write-out', '%{http_code}\n']);
    const ms = performance.now() - began;
    const ok = r.stdout.split('\n').filter((c) => c === '200').length;
    if (ok !== count) throw new Error(`curl: ${ok} of ${count} answered 200 (${r.stderr.trim()})`);
    return ms;
  };

  const ours: number[] = [];
  const theirs: number[] = [];
  await check();
  for (let i = 0; i < runs; i += 1) {
    ours.push(await check());
    theirs.push(await curl());
  }
  const ratio = median(ours) / median(theirs);
  printTable(`Registry check of ${count} digests (median of ${runs} runs)`, [
    ['what', 'median ms', 'min ms', 'max ms', 'per image ms'],
    [
      `registry check (${CONCURRENCY} at a time)`,
      median(ours),
      Math.min(...ours),
      Math.max(...ours),
      median(ours) / count,
    ],
    ['curl, in sequence', median(theirs), Math.min(...theirs), Math.max(...theirs), median(theirs) / count],
  ]);
  console.log(`  ratio registry check / curl in sequence: ${ratio.toFixed(2)}`);
  reportFigure({
    what: `registry check of ${count.toLocaleString('en-US')} image digests against a local registry`,
    measured: `${(median(ours) / 1000).toFixed(2)} s (${ratio.toFixed(2)}x curl)`,
    baseline: `the same manifest requests by curl in sequence: ${(median(theirs) / 1000).toFixed(2)} s`,
  });
} finally {
  await registry.stop();
  rmSync(work, { recursive: true, force: true });
}
