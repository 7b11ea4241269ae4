/**
 * Start-up cost of the single executable, against `node -e 0` measured in the same run: --version,
 * plan of the bundled example on a factory-fresh root (every step: nmstatectl is the test stand-in,
 * a Node script whose own start-up is measured too and shown beside it, and systemd the test
 * services on a private D-Bus), and `watch --once` on a seeded factory cluster (the real test API).
 * The commands run in turns, so the machine's load falls on all of them alike. Targets: --version
 * <= 1.4x `node -e 0`; plan <= 300 ms; plan peak RSS <= 100 MB. Run `./build.sh` first.
 *
 *   npx tsx bench/cli.ts [runs]          BENCH_BINARY=/path/to/sno-relocate measures another build
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestBus } from '../test/dbus/bus.js';
import { layFactoryNode } from '../test/fixtures/factory-node.js';
import { EXAMPLE } from '../test/helpers/cli.js';
import { startCluster } from '../test/kube/cluster.js';
import { seedFactoryCluster } from '../test/kube/factory-cluster.js';
import { applyCrds } from '../test/kube/install.js';
import { STUBS, stubEnvironment } from '../test/node/context.js';
import { factoryNetwork } from '../test/node/factory-network.js';
import { BENCH_BINARY, peakRssMb, printTable, timeCommands, type Timing } from './lib.js';
import { reportFigure } from './figures.js';

const runs = Number(process.argv[2] ?? 15);
if (!existsSync(BENCH_BINARY)) throw new Error(`${BENCH_BINARY} is missing: run ./build.sh first`);
const root = mkdtempSync(path.join(tmpdir(), 'bench-cli-'));
const bus = await startTestBus({ root });
const cluster = await startCluster();
try {
  await applyCrds(cluster.kubeconfigPath);
  await seedFactoryCluster(cluster.kubeconfigPath, { csrs: false });
  layFactoryNode(root);
  const stubs = stubEnvironment(root);
  writeFileSync(stubs.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
  const env = { ...stubs, DBUS_SYSTEM_BUS_ADDRESS: bus.address };
  const plan = [BENCH_BINARY, 'plan', EXAMPLE, '--root', root];
  // the seeded factory still pulls from its factory registry: findings, so exit 1 is expected
  const once = [BENCH_BINARY, 'watch', '--once', '--kubeconfig', cluster.kubeconfigPath, '--root', root];
  const [baseline, version, standIn, planned, watched] = timeCommands(
    [
      { name: 'node -e 0', argv: [process.execPath, '-e', '0'] },
      { name: 'sno-relocate --version', argv: [BENCH_BINARY, '--version'] },
      { name: 'nmstatectl show (stand-in)', argv: [path.join(STUBS, 'nmstatectl'), 'show'], env },
      { name: 'sno-relocate plan (example)', argv: plan, env },
      { name: 'sno-relocate watch --once (factory cluster)', argv: once, okCodes: [0, 1] },
    ],
    runs,
  ) as [Timing, Timing, Timing, Timing, Timing];
  const rss = peakRssMb(plan, env);
  const x = (ms: number) => ms / baseline.medianMs;
  const row = (t: Timing, target: string) => [t.name, t.medianMs, t.minMs, t.maxMs, x(t.medianMs), target];
  const planAlone = planned.medianMs - standIn.medianMs;
  printTable(`CLI benchmark of ${BENCH_BINARY} (median of ${runs} runs in turns)`, [
    ['command', 'median ms', 'min ms', 'max ms', 'x node -e 0', 'target'],
    row(baseline, ''),
    row(version, '<= 1.4x'),
    row(standIn, ''),
    row(planned, '<= 300 ms'),
    ['plan without the stand-in', planAlone, '', '', x(planAlone), '<= 300 ms'],
    row(watched, ''),
  ]);
  console.log(`  peak RSS of plan: ${rss.toFixed(1)} MB (target <= 100 MB)`);
  const times = (t: Timing) => `${x(t.medianMs).toFixed(1)}x \`node -e 0\``;
  const node = `\`node -e 0\` ${baseline.medianMs.toFixed(0)} ms`;
  reportFigure({
    what: '`sno-relocate --version` (single executable)',
    target: '<= 1.4x `node -e 0`',
    measured: times(version),
    baseline: node,
  });
  reportFigure({
    what: '`plan` of the bundled example, every step',
    target: '<= 300 ms',
    measured: `${planned.medianMs.toFixed(0)} ms, ${times(planned)}`,
    baseline: node,
  });
  reportFigure({
    what: '`watch --once` on a seeded factory cluster',
    measured: `${watched.medianMs.toFixed(0)} ms, ${times(watched)}`,
    baseline: node,
  });
  reportFigure({ what: 'peak RSS of `plan`', target: '<= 100 MB', measured: `${rss.toFixed(0)} MB` });
} finally {
  await cluster.stop();
  await bus.stop();
  rmSync(root, { recursive: true, force: true });
}
