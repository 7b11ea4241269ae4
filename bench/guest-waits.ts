/**
 * `npm run bench -- guest-waits`: what a test's waiting costs the emulated guest it waits on. The
 * host has two cores; qemu's emulation of every process the guest runs comes out of them, so a poll
 * slows the boot or the agent being waited for. Measured as the host CPU qemu uses during a window
 * of waiting, above the same window with the guest idle, medians of GUEST_WAITS_RUNS runs in turns:
 *
 *   ssh polls      vm.waitFor as test/e2e/scenario.ts waits for kubelet: before, every 500 ms
 *                  with `systemctl is-active` and `systemctl show` of the agent; now, one
 *                  `systemctl show` of both units, polled less often after each miss, up to every 2 s
 *   kubelet watch  waitInGuest (test/e2e/node-checks.ts) for kubelet active, as the power-cut
 *                  scenario cuts the power then: before, `systemctl is-active` every 50 ms; now,
 *                  every 250 ms and only once kubelet's cgroup exists (here it never does, as
 *                  while kubelet waits behind the agent's gate)
 *   hold point     waitInGuest for the agent's hold file, with grep: every 50 ms before, every
 *                  second now
 */
import { readFileSync } from 'node:fs';
import { HELD_FILE } from '../src/engine/hold.js';
import { KUBELET_UNIT as KUBELET } from '../src/steps/kubelet.js';
import { unitActive, waitInGuest } from '../test/e2e/node-checks.js';
import { AGENT_UNIT } from '../test/e2e/node-image.js';
import { bootVm, type Vm } from '../test/e2e/vm.js';
import { reportFigure } from './figures.js';
import { median, printTable } from './lib.js';

const RUNS = Number(process.env.GUEST_WAITS_RUNS ?? 3);
const WINDOW_MS = 20_000;
const TICKS_PER_S = 100;

/** qemu's user and system CPU time so far, in seconds (/proc/PID/stat fields 14 and 15) */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
}

/** the harness's ssh polls, with a predicate that never accepts, through the window */
const overSsh = (vm: Vm, cmd: string, poll?: { intervalMs: number; maxIntervalMs: number }) =>
  vm.waitFor(cmd, () => false, WINDOW_MS, poll).catch(() => undefined);
const HELD = `grep -qx after:kubelet ${HELD_FILE} 2>/dev/null`;
/** the harness's own in-guest wait, on a condition that stays false through the window */
const inGuest = (vm: Vm, condition: string, intervalS: number) =>
  waitInGuest(vm, condition, WINDOW_MS, { intervalS }).catch(() => undefined);

const modes: { name: string; wait: (vm: Vm) => Promise<unknown> }[] = [
  { name: 'idle', wait: (vm) => vm.ssh(`sleep ${WINDOW_MS / 1000}`) },
  {
    name: 'ssh polls, before',
    wait: (vm) =>
      overSsh(vm, `systemctl is-active ${KUBELET}; systemctl show -p ActiveState -p SubState ${AGENT_UNIT}`, {
        intervalMs: 500,
        maxIntervalMs: 500,
      }),
  },
  {
    name: 'ssh polls, now',
    wait: (vm) => overSsh(vm, `systemctl show -p ActiveState -p SubState ${KUBELET} ${AGENT_UNIT}`),
  },
  { name: 'kubelet watch, before', wait: (vm) => inGuest(vm, `systemctl is-active -q ${KUBELET}`, 0.05) },
  { name: 'kubelet watch, now', wait: (vm) => inGuest(vm, unitActive(KUBELET), 0.25) },
  { name: 'hold point, before', wait: (vm) => inGuest(vm, HELD, 0.05) },
  { name: 'hold point, now', wait: (vm) => inGuest(vm, HELD, 1) },
];

const vm = await bootVm({ name: 'guest-waits' });
const samples = modes.map((): number[] => []);
try {
  await vm.waitSsh();
  await vm.waitFor('systemctl is-system-running --wait', (r) => /running|degraded/.test(r.stdout), 300_000);
  const pid = vm.pid!;
  for (let run = 0; run < RUNS; run++)
    for (const [i, mode] of modes.entries()) {
      const cpu = cpuSeconds(pid);
      const started = performance.now();
      await mode.wait(vm);
      samples[i]!.push((cpuSeconds(pid) - cpu) / ((performance.now() - started) / 1000));
    }
} finally {
  await vm.dispose();
}

const idle = median(samples[0]!);
const above = (name: string) => median(samples[modes.findIndex((m) => m.name === name)]!) - idle;
printTable(`host cores qemu uses while a test waits (medians of ${RUNS} windows of ${WINDOW_MS / 1000} s)`, [
  ['wait', 'cores', 'above idle'],
  ...modes.map((m, i) => [m.name, median(samples[i]!).toFixed(2), (median(samples[i]!) - idle).toFixed(2)]),
]);
for (const [what, kind] of [
  ['host cores an emulated guest spends on a test polling it over ssh (kubelet wait)', 'ssh polls'],
  ['host cores an emulated guest spends on a test waiting in it for kubelet (power-cut watch)', 'kubelet watch'],
  ["host cores an emulated guest spends on a test waiting in it for the agent's hold point", 'hold point'],
] as const)
  reportFigure({
    what,
    target: 'less than before',
    measured: `${above(`${kind}, now`).toFixed(2)} above idle`,
    baseline: `${above(`${kind}, before`).toFixed(2)} before (idle ${idle.toFixed(2)})`,
  });
