/**
 * The node's part of a relocation at a site, measured in the VM of test/e2e: the node image booted
 * with the site's stick, chronyd running from boot and a real time server on the site network (as
 * test/e2e/clock.test.ts has it), so the clock step waits for a real synchronisation. Read from the
 * guest's own clock (systemd's monotonic timestamps, which start at the kernel's start, and the
 * journal's, the same clock): the agent's start, each node step's start and end, kubelet active.
 *
 * Each run boots once under the accelerator the VM tests use (TCG, an emulated CPU) and, where the
 * machine has /dev/kvm, once more under KVM (the host's own CPU): the ratio of the two boots' medians
 * is the factor by which site-time scales the emulated figures to hardware.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { enableUnit } from '../../test/e2e/disk.js';
import { events, unitProps, type JournalEntry } from '../../test/e2e/node-checks.js';
import { AGENT_UNIT, buildNodeImage } from '../../test/e2e/node-image.js';
import { newSecret, siteSpec, siteStick } from '../../test/e2e/sites.js';
import { startTimeServer } from '../../test/e2e/time-server.js';
import { bootVm } from '../../test/e2e/vm.js';
import type { NodeRun } from './model.js';

const WAIT_MS = 10 * 60_000;
const mono = (e: JournalEntry): number => Number(e.__MONOTONIC_TIMESTAMP) / 1e6;

/** One boot with the stick: seconds from the kernel's start, on the guest's clock. */
async function boot(disk: string, stick: string, accel: 'tcg' | 'kvm', name: string): Promise<NodeRun> {
  // KVM with the host's own CPU model, less the one MSR (IA32_ARCH_CAPABILITIES) this nested host refuses
  const vm = await bootVm({
    name,
    disk,
    sticks: [stick],
    uplinkToHost: true,
    accel,
    ...(accel === 'kvm' && { cpu: 'host,-arch-capabilities' }),
  });
  try {
    await vm.waitSsh();
    await vm.waitFor(
      `systemctl show -p ActiveState -p ExecMainExitTimestampMonotonic ${AGENT_UNIT}`,
      (r) => /^ActiveState=(inactive|failed)$/m.test(r.stdout) && !/^ExecMainExitTimestampMonotonic=0$/m.test(r.stdout),
      WAIT_MS,
    );
    const agent = await unitProps(vm, AGENT_UNIT, ['ExecMainStartTimestampMonotonic', 'ExecMainStatus']);
    if (agent.ExecMainStatus !== '0') throw new Error(`${name}: the agent exited ${agent.ExecMainStatus}`);
    const kubelet = await unitProps(vm, KUBELET, ['ActiveEnterTimestampMonotonic']);
    const started = await events(vm, 'stepStarted');
    const ended = [...(await events(vm, 'stepFinished')), ...(await events(vm, 'stepSkipped'))];
    const steps = started.map((s) => {
      const end = ended.find((e) => e.SNO_RELOCATE_STEP === s.SNO_RELOCATE_STEP && mono(e) >= mono(s));
      if (!end) throw new Error(`${name}: step ${s.SNO_RELOCATE_STEP} started but never ended`);
      return { name: s.SNO_RELOCATE_STEP!, startS: mono(s), endS: mono(end) };
    });
    return {
      accel,
      agentStartS: Number(agent.ExecMainStartTimestampMonotonic) / 1e6,
      steps,
      kubeletActiveS: Number(kubelet.ActiveEnterTimestampMonotonic) / 1e6,
    };
  } finally {
    await vm.dispose();
  }
}

/** `runs` boots under each accelerator, in turns, one at a time. */
export async function measureNode(runs: number, accels: readonly NodeRun['accel'][]): Promise<NodeRun[]> {
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
    const out: NodeRun[] = [];
    for (let i = 0; i < runs; i++) {
      for (const accel of accels) out.push(await boot(image.disk, stick, accel, `site-time-${accel}-${i}`));
      console.log(`node: boot ${i + 1}/${runs} measured`);
    }
    return out;
  } finally {
    await image.dispose();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
