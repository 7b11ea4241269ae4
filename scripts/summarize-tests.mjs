// Sums vitest JSON reports into the one line CI reads: "N passed, N failed".
// Extra failures (typecheck, lint) are counted as failed checks. Each failed test is named with the
// first line of its error, so the tail of a CI log says what failed. Before that line: each tier's
// time (its files one after another, and the wall time from its first start to its last end) and
// the ten slowest files, so a run that grows shows where (docs/testing.md gives the budgets).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const [dir, extraFailures = '0'] = process.argv.slice(2);
let passed = 0;
let failed = Number(extraFailures);
let skipped = 0;
const tiers = [];
const seconds = (ms) => `${Math.round(ms / 1000)} s`;
const failures = [];
const files = [];
for (const name of readdirSync(dir).filter((f) => /^vitest-.*\.json$/.test(f))) {
  const report = JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
  console.log(
    `${name}: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests + report.numTodoTests} skipped`,
  );
  passed += report.numPassedTests;
  failed += report.numFailedTests + (report.success === false && report.numFailedTests === 0 ? 1 : 0);
  skipped += report.numPendingTests + report.numTodoTests;
  const tier = name.replace(/^vitest-|\.json$/g, '');
  const starts = report.testResults.map((f) => f.startTime);
  const ends = report.testResults.map((f) => f.endTime);
  const sum = report.testResults.reduce((s, f) => s + (f.endTime - f.startTime), 0);
  tiers.push(
    `  ${tier}: ${report.testResults.length} files, ${seconds(sum)} of files, ${seconds(Math.max(...ends) - Math.min(...starts))} from first start to last end`,
  );
  for (const file of report.testResults) {
    const where = path.relative(process.cwd(), file.name);
    files.push({ where, tier, ms: file.endTime - file.startTime });
    for (const t of file.assertionResults.filter((a) => a.status === 'failed')) {
      const first = (t.failureMessages[0] ?? '').split('\n')[0];
      failures.push(`  FAILED ${where} > ${t.fullName}\n         ${first.slice(0, 300)}`);
    }
    if (file.status === 'failed' && file.message && file.assertionResults.every((a) => a.status !== 'failed'))
      failures.push(`  FAILED ${where}: ${(file.message ?? '').split('\n')[0].slice(0, 300)}`);
  }
  // errors in hooks and outside any test (scripts/vitest-hook-errors.mjs)
  const hooks = path.join(dir, name.replace(/^vitest-/, 'hooks-'));
  if (existsSync(hooks))
    for (const h of JSON.parse(readFileSync(hooks, 'utf8')))
      failures.push(`  FAILED ${h.file} (${h.where}):\n         ${h.error}`);
}
console.log('time per tier:');
for (const t of tiers) console.log(t);
console.log('the ten slowest files:');
for (const f of files.sort((a, b) => b.ms - a.ms).slice(0, 10))
  console.log(`  ${seconds(f.ms).padStart(6)}  ${f.where} (${f.tier})`);
for (const f of failures) console.log(f);
if (Number(extraFailures) > 0) console.log(`typecheck/lint: ${extraFailures} failed`);
if (skipped > 0) console.log(`${skipped} skipped`);
console.log(`${passed} passed, ${failed} failed`);
