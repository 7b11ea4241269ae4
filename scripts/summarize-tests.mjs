// Sums vitest JSON reports into the one line CI reads: "N passed, N failed".
// Extra failures (typecheck, lint) are counted as failed checks.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const [dir, extraFailures = '0'] = process.argv.slice(2);
let passed = 0;
let failed = Number(extraFailures);
let skipped = 0;
for (const name of readdirSync(dir).filter((f) => /^vitest-.*\.json$/.test(f))) {
  const report = JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
  console.log(
    `${name}: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests + report.numTodoTests} skipped`,
  );
  passed += report.numPassedTests;
  failed += report.numFailedTests + (report.success === false && report.numFailedTests === 0 ? 1 : 0);
  skipped += report.numPendingTests + report.numTodoTests;
}
if (Number(extraFailures) > 0) console.log(`typecheck/lint: ${extraFailures} failed`);
if (skipped > 0) console.log(`${skipped} skipped`);
console.log(`${passed} passed, ${failed} failed`);
