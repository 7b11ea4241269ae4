/**
 * `npm run bench`: builds the agent, then runs every benchmark under bench/ one after another (so
 * they do not disturb each other), prints their tables, and writes the figures they report into
 * the table of docs/performance.md (figures.ts). `npm run bench -- cli trust` runs those only.
 * Benchmarks that need the real kube-apiserver or the VM image find them as `npm test` leaves them.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Figure, PERFORMANCE_DOC, type Reported, withFigures } from './figures.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.dirname(here);
const only = process.argv.slice(2);
const benches = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !['lib.ts', 'figures.ts', 'run-all.ts'].includes(f))
  .filter((f) => only.length === 0 || only.includes(path.basename(f, '.ts')));

const build = spawnSync('./build.sh', { cwd: repo, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-bench-'));
const figures: Reported[] = [];
let failed = 0;
try {
  for (const bench of benches) {
    console.log(`\n=== bench/${bench}`);
    const file = path.join(work, `${bench}.jsonl`);
    writeFileSync(file, '');
    const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(here, bench)], {
      cwd: repo,
      stdio: 'inherit',
      env: { ...process.env, BENCH_FIGURES: file },
    });
    if (result.status !== 0) failed += 1;
    // a benchmark that failed halfway still reports what it measured before
    const by = `bench/${path.basename(bench, '.ts')}`;
    for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean))
      figures.push({ ...(JSON.parse(line) as Figure), by });
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (figures.length > 0) {
  writeFileSync(PERFORMANCE_DOC, withFigures(readFileSync(PERFORMANCE_DOC, 'utf8'), figures));
  console.log(`\n${figures.length} figure(s) written into ${path.relative(repo, PERFORMANCE_DOC)}`);
}
console.log(`${benches.length - failed} of ${benches.length} benchmarks ran`);
process.exitCode = failed ? 1 : 0;
