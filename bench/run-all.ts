/**
 * `npm run bench`: builds the agent, then runs every benchmark under bench/ one after another (so
 * they do not disturb each other) and prints their tables. Benchmarks that need the real
 * kube-apiserver or the VM image find them as `npm test` leaves them.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.dirname(here);
const only = process.argv.slice(2);
const benches = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !['lib.ts', 'run-all.ts'].includes(f))
  .filter((f) => only.length === 0 || only.includes(path.basename(f, '.ts')));

const build = spawnSync('./build.sh', { cwd: repo, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
let failed = 0;
for (const bench of benches) {
  console.log(`\n=== bench/${bench}`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', path.join(here, bench)], {
    cwd: repo,
    stdio: 'inherit',
  });
  if (result.status !== 0) failed += 1;
}
console.log(`\n${benches.length - failed} of ${benches.length} benchmarks ran`);
process.exitCode = failed ? 1 : 0;
