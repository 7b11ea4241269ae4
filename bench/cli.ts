/**
 * Start-up and plan cost of the single executable, against `node -e 0` measured in the same run.
 * The plan is of the bundled example on a factory-fresh root, every step: nmstatectl is the test
 * stand-in (a Node script, so its own start-up is measured too and shown beside it) and systemd the
 * test services on a private D-Bus. Targets: --version median <= 150 ms; plan <= 300 ms; plan peak
 * RSS <= 100 MB. Run `./build.sh` first. `npx tsx bench/cli.ts [runs]`
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestBus } from '../test/dbus/bus.js';
import { layFactoryNode } from '../test/fixtures/factory-node.js';
import { BINARY, EXAMPLE } from '../test/helpers/cli.js';
import { STUBS, stubEnvironment } from '../test/node/context.js';
import { factoryNetwork } from '../test/node/factory-network.js';
import { peakRssMb, printTable, timeCommand } from './lib.js';

const runs = Number(process.argv[2] ?? 15);
const root = mkdtempSync(path.join(tmpdir(), 'bench-cli-'));
const bus = await startTestBus({ root });
try {
  layFactoryNode(root);
  const stubs = stubEnvironment(root);
  writeFileSync(stubs.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
  const env = { ...stubs, DBUS_SYSTEM_BUS_ADDRESS: bus.address };
  const plan = [BINARY, 'plan', EXAMPLE, '--root', root];
  const baseline = timeCommand('node -e 0', [process.execPath, '-e', '0'], runs);
  const version = timeCommand('sno-relocate --version', [BINARY, '--version'], runs);
  const standIn = timeCommand('nmstatectl show (stand-in)', [path.join(STUBS, 'nmstatectl'), 'show'], runs, env);
  const planned = timeCommand('sno-relocate plan (example)', plan, runs, env);
  const rss = peakRssMb(plan, env);
  const x = (ms: number) => ms / baseline.medianMs;
  printTable(`CLI benchmark (median of ${runs} runs)`, [
    ['command', 'median ms', 'min ms', 'max ms', 'x node -e 0', 'target'],
    [baseline.name, baseline.medianMs, baseline.minMs, baseline.maxMs, 1, ''],
    [version.name, version.medianMs, version.minMs, version.maxMs, x(version.medianMs), '<= 150 ms'],
    [standIn.name, standIn.medianMs, standIn.minMs, standIn.maxMs, x(standIn.medianMs), ''],
    [planned.name, planned.medianMs, planned.minMs, planned.maxMs, x(planned.medianMs), '<= 300 ms'],
    [
      'plan without the stand-in',
      planned.medianMs - standIn.medianMs,
      '',
      '',
      x(planned.medianMs - standIn.medianMs),
      '<= 300 ms',
    ],
  ]);
  console.log(`  peak RSS of plan: ${rss.toFixed(1)} MB (target <= 100 MB)`);
} finally {
  await bus.stop();
  rmSync(root, { recursive: true, force: true });
}
