/**
 * Trust costs, in process, medians of many runs: verifying a signed config folder (reading its
 * signature, the trust anchors and the node identity under a root, checking the Ed25519 signature
 * and the manifest) against loading the same folder, unsigned, in the same run. Target: the
 * verification under 20 ms. Also the fuzzing throughput (hostile folders loaded per second).
 * `npx tsx bench/trust.ts [runs]`
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { loadSiteConfig } from '../src/config/load.js';
import { createBanner } from '../src/engine/banner.js';
import { createLogger } from '../src/log/logger.js';
import { systemClock } from '../src/ports/clock.js';
import { createRootFs } from '../src/ports/fs.js';
import { checkTrust } from '../src/trust/check.js';
import { generateSigningKey, readPrivateKey, SIGNATURE_FILE, signSiteConfig } from '../src/trust/signature.js';
import { folderMutation, layFolder } from '../test/fuzz/mutations.js';
import { layFactoryNode } from '../test/fixtures/factory-node.js';
import { EXAMPLE } from '../test/helpers/cli.js';
import { median, printTable } from './lib.js';

const runs = Number(process.argv[2] ?? 200);
const work = mkdtempSync(path.join(tmpdir(), 'bench-trust-'));

async function timeIt(fn: () => Promise<unknown>): Promise<number[]> {
  await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const started = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return samples;
}

try {
  const site = path.join(work, 'site');
  cpSync(EXAMPLE, site, { recursive: true });
  const root = path.join(work, 'root');
  layFactoryNode(root);
  const key = generateSigningKey();
  mkdirSync(path.join(root, 'etc/sno-relocate/trust'), { recursive: true });
  writeFileSync(path.join(root, 'etc/sno-relocate/trust/factory.pub'), key.publicPem);
  const loaded = await loadSiteConfig(site, new Date());
  const doc = signSiteConfig(readPrivateKey(key.privatePem, 'key'), {
    site: loaded.site.name,
    files: loaded.files,
    now: new Date(),
  });
  writeFileSync(path.join(site, SIGNATURE_FILE), JSON.stringify(doc));
  const ctx = {
    fs: createRootFs(root),
    clock: systemClock,
    log: createLogger({ level: 'warn', write: () => undefined }),
    banner: createBanner(undefined),
  };

  const load = await timeIt(() => loadSiteConfig(site, new Date()));
  const verify = await timeIt(() => checkTrust(ctx, loaded));
  const both = await timeIt(async () => checkTrust(ctx, await loadSiteConfig(site, new Date())));

  const cases = 2000;
  const folders = fc.sample(folderMutation, { numRuns: cases, seed: 42 });
  let n = 0;
  const started = process.hrtime.bigint();
  for (const folder of folders) {
    const dir = path.join(work, `fuzz-${n++}`);
    layFolder(dir, folder);
    await loadSiteConfig(dir, new Date()).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  const perSecond = cases / (Number(process.hrtime.bigint() - started) / 1e9);

  const row = (name: string, s: number[], target: string) => [
    name,
    median(s),
    Math.min(...s),
    Math.max(...s),
    median(s) / median(load),
    target,
  ];
  printTable(`Trust benchmark (median of ${runs} runs, in process)`, [
    ['operation', 'median ms', 'min ms', 'max ms', 'x load', 'target'],
    row('load the folder (baseline)', load, ''),
    row('verify the signature', verify, '< 20 ms'),
    row('load and verify', both, ''),
  ]);
  console.log(`  fuzzing: ${perSecond.toFixed(0)} hostile folders laid out and loaded per second (${cases} cases)`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
