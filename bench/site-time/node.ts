/**
 * The node's part of a relocation at a site, read from the VM of test/e2e: the guest's own clock
 * (the journal's monotonic timestamps, which start at the kernel's start) gives the agent's start,
 * each node step's start and end, and kubelet turning active.
 *
 * Two sources: the journals the VM suite keeps of its scenarios (.artifacts/<scenario>/journal.json),
 * every boot whose stick was there at power-on and whose run went through the kubelet gate; and a
 * boot of its own, the node image with the site's stick, chronyd from boot and a real time server on
 * the site network (as test/e2e/clock.test.ts has it), so the clock step waits for a real
 * synchronisation.
 *
 * The VM runs under TCG, as the VM tests do: an emulated CPU, many times slower than the host's. The
 * factor that scales its figures to hardware is measured in that boot: the agent's own executable
 * started (`sno-relocate --version`, median of 5) in the guest, over the same on the host.
 */
import { spawnSync } from 'node:child_process';
import { readdir, readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { enableUnit } from '../../test/e2e/disk.js';
import { journal, MessageId, unitProps, type JournalEntry } from '../../test/e2e/node-checks.js';
import { AGENT_BINARY, AGENT_UNIT, buildNodeImage, ensureAgentBuild } from '../../test/e2e/node-image.js';
import { newSecret, siteSpec, siteStick } from '../../test/e2e/sites.js';
import { startTimeServer } from '../../test/e2e/time-server.js';
import { bootVm, REPO_ROOT } from '../../test/e2e/vm.js';
import { STEPS } from '../../src/steps/index.js';
import { median } from '../lib.js';
import type { NodeRun } from './model.js';

const WAIT_MS = 10 * 60_000;
const STARTS = 5;
/** the agent's executable started STARTS times in the guest: microseconds each, on the guest's clock */
const GUEST_STARTS = `for i in $(seq ${STARTS}); do s=$(date +%s%N); ${AGENT_BINARY} --version >/dev/null; echo $(( ($(date +%s%N) - s) / 1000 )); done`;
const mono = (e: JournalEntry): number => Number(e.__MONOTONIC_TIMESTAMP) / 1e6;
/** systemd's message ids: a unit starting, a unit started */
const UNIT_STARTING = '7d4958e842da4a758f6c1cdc7b36dcc5';
const UNIT_STARTED = '39f53479d3a045ac8e11786248231fbf';
/** a stick there at power-on: the run starts within seconds of the agent, not after waiting for one */
const CONFIG_AT_START_S = 5;
const NODE_STEPS = new Set(STEPS.filter((s) => s.group === 'node').map((s) => s.name));

/**
 * One boot's node part from its journal; undefined when its stick came later or its run stopped
 * before kubelet. `stickAtPowerOn`: the boot is known to have had its stick from power-on (the
 * bench's own), however long admission took; a recorded scenario's run counts only when it started
 * within CONFIG_AT_START_S of the agent.
 */
export function nodeRunOf(
  scenario: string,
  entries: readonly JournalEntry[],
  stickAtPowerOn = false,
): NodeRun | undefined {
  const of = (id: string) => entries.filter((e) => e.MESSAGE_ID === id);
  const agent = entries.find((e) => e.UNIT === AGENT_UNIT && e.MESSAGE_ID === UNIT_STARTING);
  const run = of(MessageId.runStarted)[0];
  if (!agent || !run || (!stickAtPowerOn && mono(run) - mono(agent) > CONFIG_AT_START_S)) return undefined;
  const ended = [...of(MessageId.stepFinished), ...of(MessageId.stepSkipped)];
  const steps: NodeRun['steps'] = [];
  // the first run's node steps, each once, up to the kubelet gate
  for (const s of of(MessageId.stepStarted)) {
    const name = s.SNO_RELOCATE_STEP!;
    if (!NODE_STEPS.has(name) || steps.some((x) => x.name === name)) continue;
    const end = ended.find((e) => e.SNO_RELOCATE_STEP === name && mono(e) >= mono(s));
    if (!end) return undefined;
    steps.push({ name, startS: mono(s), endS: mono(end) });
    if (name === 'kubelet') break;
  }
  const gate = steps.find((s) => s.name === 'kubelet');
  const kubelet =
    gate && entries.find((e) => e.UNIT === KUBELET && e.MESSAGE_ID === UNIT_STARTED && mono(e) >= gate.startS);
  if (!kubelet) return undefined;
  return {
    scenario,
    agentStartS: mono(agent),
    steps: steps.sort((a, b) => a.startS - b.startS),
    kubeletActiveS: mono(kubelet),
  };
}

/** the agent's and kubelet's lines of a boot, for an error that must say where the run stopped */
const passage = (entries: readonly JournalEntry[]): string =>
  entries
    .filter((e) => e.UNIT === AGENT_UNIT || e.UNIT === KUBELET || e.SNO_RELOCATE_STEP !== undefined)
    .map((e) => `${mono(e).toFixed(1)} ${e.SNO_RELOCATE_STEP ?? e.UNIT ?? ''}: ${e.MESSAGE ?? ''}`)
    .join('\n');

/** Every usable boot of the journals the VM suite kept. */
export async function recordedBoots(dir = join(REPO_ROOT, '.artifacts')): Promise<NodeRun[]> {
  const out: NodeRun[] = [];
  for (const scenario of (await readdir(dir)).sort()) {
    const text = await readFile(join(dir, scenario, 'journal.json'), 'utf8').catch(() => '');
    const boots = new Map<string, JournalEntry[]>();
    for (const line of text.split('\n').filter(Boolean)) {
      const e = JSON.parse(line) as JournalEntry;
      boots.set(e._BOOT_ID ?? '', [...(boots.get(e._BOOT_ID ?? '') ?? []), e]);
    }
    for (const entries of boots.values()) {
      const run = nodeRunOf(scenario, entries);
      if (run) out.push(run);
    }
  }
  return out;
}

/** One boot with the stick and a time server; its node part, and the agent's start in the guest (seconds). */
async function boot(disk: string, stick: string, name: string): Promise<{ run: NodeRun; guestReferenceS: number }> {
  const vm = await bootVm({ name, disk, sticks: [stick], uplinkToHost: true });
  try {
    await vm.waitSsh();
    await vm.waitFor(
      `systemctl show -p ActiveState -p ExecMainExitTimestampMonotonic ${AGENT_UNIT}`,
      (r) => /^ActiveState=(inactive|failed)$/m.test(r.stdout) && !/^ExecMainExitTimestampMonotonic=0$/m.test(r.stdout),
      WAIT_MS,
    );
    const agent = await unitProps(vm, AGENT_UNIT, ['ExecMainStatus']);
    if (agent.ExecMainStatus !== '0') throw new Error(`${name}: the agent exited ${agent.ExecMainStatus}`);
    const entries = await journal(vm, '-b 0');
    const run = nodeRunOf(name, entries, true);
    if (!run) throw new Error(`${name}: the journal shows no run through the kubelet gate: ${passage(entries)}`);
    const starts = (await vm.sshOk(GUEST_STARTS)).trim().split('\n').map(Number);
    return { run, guestReferenceS: median(starts) / 1e6 };
  } finally {
    await vm.dispose();
  }
}

/** The same start on the host: seconds, median of STARTS. */
async function hostReference(): Promise<number> {
  const agent = await ensureAgentBuild();
  const times = Array.from({ length: STARTS }, () => {
    const t = performance.now();
    const r = spawnSync(agent, ['--version'], { stdio: 'ignore' });
    if (r.status !== 0) throw new Error(`${agent} --version: exit ${r.status}`);
    return (performance.now() - t) / 1000;
  });
  return median(times);
}

export interface NodeMeasurement {
  runs: NodeRun[];
  guestReferenceS: number;
  hostReferenceS: number;
}

/** `boots` boots of its own, one at a time, with the VM suite's recorded boots, and the host's reference after them. */
export async function measureNode(boots: number): Promise<NodeMeasurement> {
  const server = await startTimeServer();
  const dir = await mkdtemp(join(tmpdir(), 'sno-bench-site-time-'));
  const image = await buildNodeImage();
  try {
    // chronyd from boot, as on RHCOS: unsynchronised until the site's time server answers
    await enableUnit(image.disk, 'chronyd.service');
    const stick = await siteStick(dir, 'site.img', {
      ...siteSpec(newSecret()),
      chronyConfig: `${server.serverLine}\n`,
    });
    const own: { run: NodeRun; guestReferenceS: number }[] = [];
    for (let i = 0; i < boots; i++) {
      own.push(await boot(image.disk, stick, `site-time-${i}`));
      console.log(`node: boot ${i + 1}/${boots} measured`);
    }
    return {
      runs: [...own.map((o) => o.run), ...(await recordedBoots())],
      guestReferenceS: median(own.map((o) => o.guestReferenceS)),
      hostReferenceS: await hostReference(),
    };
  } finally {
    await image.dispose();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
