/**
 * Start-up and plan cost of the single executable, against `node -e 0` measured in the same run.
 * Targets: --version median <= 150 ms; plan of the bundled example <= 300 ms; plan peak RSS <= 100 MB.
 * Run `./build.sh` first. `npx tsx bench/cli.ts [runs]`
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { layFactoryNode } from '../test/fixtures/factory-node.js';
import { BINARY, EXAMPLE } from '../test/helpers/cli.js';
import { stubEnvironment } from '../test/node/context.js';
import { peakRssMb, printTable, timeCommand } from './lib.js';

const runs = Number(process.argv[2] ?? 15);
const root = mkdtempSync(path.join(tmpdir(), 'bench-cli-'));
try {
  layFactoryNode(root);
  const env = stubEnvironment(root);
  const plan = [BINARY, 'plan', EXAMPLE, '--root', root, '--only', 'node'];
  const baseline = timeCommand('node -e 0', [process.execPath, '-e', '0'], runs);
  const version = timeCommand('sno-relocate --version', [BINARY, '--version'], runs);
  const planned = timeCommand('sno-relocate plan (node steps)', plan, runs, env);
  const rss = peakRssMb(plan, env);
  printTable(`CLI benchmark (median of ${runs} runs)`, [
    ['command', 'median ms', 'min ms', 'max ms', 'x node -e 0', 'target'],
    [baseline.name, baseline.medianMs, baseline.minMs, baseline.maxMs, 1, ''],
    [version.name, version.medianMs, version.minMs, version.maxMs, version.medianMs / baseline.medianMs, '<= 150 ms'],
    [planned.name, planned.medianMs, planned.minMs, planned.maxMs, planned.medianMs / baseline.medianMs, '<= 300 ms'],
  ]);
  console.log(`  peak RSS of plan: ${rss.toFixed(1)} MB (target <= 100 MB)`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
