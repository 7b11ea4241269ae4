/**
 * How long `sno-relocate run --only node` takes on a factory-fresh node: every node step,
 * against a temporary root, with the nmstatectl stub on PATH and the test systemd/hostnamed on a
 * private D-Bus. Each run starts from a fresh root and a fresh stub network, so every step changes
 * something. Baselines measured in the same run: `node -e 0`, `--version`, and `plan --only node`.
 * The current source is bundled first (as build.sh bundles it), so the numbers are for this tree.
 * Target: median run under 1 s. Also the size of the factory MachineConfigs together (committed
 * under machineconfigs/, as ./build.sh renders them), against the 256 KiB target.
 * `npx tsx bench/node-steps.ts [runs]`
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { startTestBus } from '../test/dbus/bus.js';
import { layFactoryNode } from '../test/fixtures/factory-node.js';
import { loopbackStoreSpec, writeSiteFolder } from '../test/node/cli.js';
import { REPO, STUBS, stubEnvironment } from '../test/node/context.js';
import { factoryNetwork } from '../test/node/factory-network.js';
import { STEPS } from '../src/steps/index.js';
import { median, printTable } from './lib.js';
import { reportFigure } from './figures.js';

const NODE_STEP_COUNT = STEPS.filter((s) => s.group === 'node').length;

const runs = Number(process.argv[2] ?? 9);
const TARGET_MS = 1000;
const MC_LIMIT = 256 * 1024;
const work = mkdtempSync(path.join(tmpdir(), 'bench-node-steps-'));
const bundle = path.join(work, 'sno-relocate.cjs');

const SITE = writeSiteFolder(
  path.join(work, 'site'),
  'store-0042',
  loopbackStoreSpec('c3RvcmU0Mjpub3QtYS1yZWFsLXBhc3N3b3Jk', 30),
);

function run(argv: string[], env: Record<string, string>): { ms: number; stderr: string } {
  const started = process.hrtime.bigint();
  const r = spawnSync(argv[0]!, argv.slice(1), {
    encoding: 'utf8',
    env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '', ...env },
  });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status}\n${r.stderr}`);
  return { ms, stderr: r.stderr };
}
const timed = (argv: string[], env: Record<string, string>) => run(argv, env).ms;

interface Sample {
  ms: number;
  /** time spent waiting for the nmstatectl stub, summed from the agent's own debug log of its commands */
  stubMs: number;
  stubCalls: number;
}

const bus = await startTestBus();
try {
  await build({
    entryPoints: [path.join(REPO, 'src/cli/main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: true,
    external: ['x11'],
    logLevel: 'warning',
    outfile: bundle,
  });

  /** A factory-fresh node: new root, the stub's factory network, kubelet disabled and stopped. */
  const freshNode = async () => {
    const root = mkdtempSync(path.join(work, 'root-'));
    layFactoryNode(root);
    const env: Record<string, string> = { ...stubEnvironment(root), DBUS_SYSTEM_BUS_ADDRESS: bus.address };
    writeFileSync(env.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
    await bus.services.configure({ root });
    return { root, env };
  };
  const agent = (root: string, what: string) => [
    process.execPath,
    bundle,
    what,
    SITE,
    '--root',
    root,
    '--only',
    'node',
    '--log-level',
    'debug',
    '--log-format',
    'json',
  ];

  const sample = async (what: 'run' | 'plan'): Promise<Sample> => {
    const { root, env } = await freshNode();
    const { ms, stderr } = run(agent(root, what), env);
    const stubRuns = stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { command?: string; durationMs?: number })
      .filter((entry) => entry.command === 'nmstatectl' && entry.durationMs !== undefined);
    const stubCalls = (JSON.parse(readFileSync(env.NMSTATECTL_STUB_STATE!, 'utf8')) as { calls: unknown[] }).calls
      .length;
    return { ms, stubMs: stubRuns.reduce((sum, e) => sum + e.durationMs!, 0), stubCalls };
  };
  const repeat = async <T>(fn: () => Promise<T> | T): Promise<T[]> => {
    await fn();
    const out: T[] = [];
    for (let i = 0; i < runs; i++) out.push(await fn());
    return out;
  };

  const baseline = await repeat(() => timed([process.execPath, '-e', '0'], {}));
  const version = await repeat(() => timed([process.execPath, bundle, '--version'], {}));
  const stubShow = await repeat(async () =>
    timed([path.join(STUBS, 'nmstatectl'), 'show', '--json'], (await freshNode()).env),
  );
  const plans = await repeat(() => sample('plan'));
  const fullRuns = await repeat(() => sample('run'));

  const base = median(baseline);
  const row = (name: string, values: number[], target = '') => [
    name,
    median(values),
    Math.min(...values),
    Math.max(...values),
    median(values) / base,
    target,
  ];
  const runMedian = median(fullRuns.map((s) => s.ms));
  const stubCalls = median(fullRuns.map((s) => s.stubCalls));
  printTable(`Node steps benchmark (median of ${runs} runs, each on a fresh factory root)`, [
    ['what', 'median ms', 'min ms', 'max ms', 'x node -e 0', 'target'],
    row('node -e 0', baseline),
    row('sno-relocate --version', version),
    row('nmstatectl stub: show --json', stubShow),
    row(
      'plan --only node',
      plans.map((s) => s.ms),
    ),
    row(
      `run --only node (${NODE_STEP_COUNT} steps)`,
      fullRuns.map((s) => s.ms),
      `< ${TARGET_MS} ms`,
    ),
  ]);
  const stubMs = median(fullRuns.map((s) => s.stubMs));
  console.log(
    `  run: ${stubCalls} nmstatectl stub calls took ${stubMs.toFixed(0)} ms of it (a Node process each); the rest, ${(runMedian - stubMs).toFixed(0)} ms, is the agent's`,
  );
  console.log(
    `  run median ${runMedian.toFixed(0)} ms: ${runMedian < TARGET_MS ? 'within' : 'OVER'} the ${TARGET_MS} ms target`,
  );
  if (runMedian >= TARGET_MS) process.exitCode = 1;

  const machineConfigs = readdirSync(path.join(REPO, 'machineconfigs')).filter((f) => f.endsWith('.yaml'));
  const mcBytes = machineConfigs.reduce((sum, f) => sum + statSync(path.join(REPO, 'machineconfigs', f)).size, 0);
  console.log(
    `  MachineConfigs together: ${(mcBytes / 1024).toFixed(1)} KiB in ${machineConfigs.length} objects: ${mcBytes < MC_LIMIT ? 'within' : 'OVER'} the ${MC_LIMIT / 1024} KiB target`,
  );
  if (mcBytes >= MC_LIMIT) process.exitCode = 1;
  reportFigure({
    what: '`run --only node` on a fresh factory root',
    target: `< ${TARGET_MS / 1000} s`,
    measured: `${runMedian.toFixed(0)} ms for ${NODE_STEP_COUNT} steps, of which ${stubMs.toFixed(0)} ms are ${stubCalls} starts of the nmstatectl stand-in`,
    baseline: `\`node -e 0\` ${median(baseline).toFixed(0)} ms`,
  });
  reportFigure({
    what: 'factory MachineConfigs together',
    target: `< ${MC_LIMIT / 1024} KiB`,
    measured: `${(mcBytes / 1024).toFixed(1)} KiB in ${machineConfigs.length} objects`,
  });
} finally {
  await bus.stop();
  rmSync(work, { recursive: true, force: true });
}
