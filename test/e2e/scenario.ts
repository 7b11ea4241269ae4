/**
 * Shared scenario plumbing: skipping with VM_E2E=0, the node image per test file, timings kept for
 * bench/e2e.ts, and the assertions every converged node must pass.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { STEPS } from '../../src/steps/index.js';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { AGENT_UNIT, type NodeImage } from './node-image.js';
import { events, unitProps, type JournalEntry } from './node-checks.js';
import { INTERNAL_IP, SITE_ADDRESS } from './sites.js';
import { REPO_ROOT, type Vm } from './vm.js';

export const MIN = 60_000;
export const skipVm = process.env.VM_E2E === '0';
export const NODE_STEPS = STEPS.filter((s) => s.group === 'node').map((s) => s.name);

export function announceSkip(what: string): void {
  if (skipVm) console.log(`VM end-to-end ${what} skipped: VM_E2E=0`);
}

/** Scenario timings, one JSON file per scenario under .artifacts/e2e-timings/, read by bench/e2e.ts. */
export async function recordTimings(scenario: string, timings: Record<string, number | string>): Promise<void> {
  const dir = join(REPO_ROOT, '.artifacts', 'e2e-timings');
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, `${scenario}.json`),
    `${JSON.stringify({ scenario, at: new Date().toISOString(), ...timings }, null, 2)}\n`,
  );
  console.log(
    `${scenario}: ${Object.entries(timings)
      .map(([k, v]) => `${k}=${typeof v === 'number' ? `${(v / 1000).toFixed(1)}s` : v}`)
      .join(' ')}`,
  );
}

/** Waits for the agent's main process to exit with `status` ('2/', '1/FAILURE'), from its journal. */
export async function waitAgentExited(vm: Vm, status: string, timeoutMs = 5 * MIN): Promise<void> {
  await vm.waitFor(
    `journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager | grep -q 'Main process exited, code=exited, status=${status}'`,
    (r) => r.code === 0,
    timeoutMs,
  );
}

/** After a refused stick: the hostname as it was, kubelet stopped and its gate shut (no node step passed). */
export async function expectNodeHeld(vm: Vm, hostname: string): Promise<void> {
  expect(await vm.sshOk('hostnamectl hostname')).toBe(hostname);
  expect((await vm.ssh(`systemctl is-active ${KUBELET}`)).stdout.trim()).toBe('inactive');
  expect((await vm.ssh('test -e /var/lib/sno-relocate/kubelet-gate')).code).not.toBe(0);
}

/**
 * Waits until the agent unit's run has ended, and expects it to have succeeded: exit 0, result
 * success, and the unit no longer active (a oneshot without RemainAfterExit, so that a stick
 * plugged in later can start it again).
 */
export async function waitAgentSucceeded(vm: Vm, timeoutMs = 6 * MIN): Promise<void> {
  const props = ['ActiveState', 'SubState', 'Result', 'ExecMainStatus', 'ExecMainExitTimestampMonotonic'];
  const r = await vm.waitFor(
    `systemctl show ${props.map((p) => `-p ${p}`).join(' ')} ${AGENT_UNIT}`,
    (x) => /^ActiveState=(inactive|failed)$/m.test(x.stdout) && !/^ExecMainExitTimestampMonotonic=0$/m.test(x.stdout),
    timeoutMs,
  );
  expect(r.stdout).toMatch(/^Result=success$/m);
  expect(r.stdout).toMatch(/^ExecMainStatus=0$/m);
}

/**
 * Waits for kubelet to be active; fails at once, with the agent's journal, when the agent unit
 * has failed instead (a failed agent never opens the gate, so waiting longer would only hide why).
 */
export async function waitKubeletActive(vm: Vm, timeoutMs = 8 * MIN): Promise<void> {
  // one systemctl for both units (a systemctl is the costly part of a poll in an emulated guest):
  // kubelet's properties, a blank line, the agent's
  const units = (out: string) => out.split('\n\n');
  const active = (out: string) => /^ActiveState=active$/m.test(units(out)[0] ?? '');
  const failed = (out: string) => /^(ActiveState=failed|SubState=auto-restart)$/m.test(units(out)[1] ?? '');
  const r = await vm.waitFor(
    `systemctl show -p ActiveState -p SubState ${KUBELET} ${AGENT_UNIT}`,
    (x) => active(x.stdout) || failed(x.stdout),
    timeoutMs,
  );
  if (!active(r.stdout)) {
    const tail = await vm.ssh(`journalctl -b 0 -u ${AGENT_UNIT} -n 40 --no-pager`);
    throw new Error(`${vm.name}: ${AGENT_UNIT} failed before kubelet started:\n${tail.stdout}`);
  }
}

/** Monotonic µs of a journal entry. */
export const mono = (e: JournalEntry): number => Number(e.__MONOTONIC_TIMESTAMP);

/**
 * The gate, from systemd's own timestamps. kubelet entered "active" after the agent started and
 * after its last node step before the gate finished, and no later than the agent's exit: the gate
 * is the agent's own last node step, which starts kubelet and waits for the start job, so kubelet
 * is up before the agent exits (the cluster steps, not run in the VM, need it running).
 */
export async function expectKubeletGated(
  vm: Vm,
): Promise<{ kubeletActiveUs: number; agentStartUs: number; agentExitUs: number; hostnameDoneUs: number }> {
  const agent = await unitProps(vm, AGENT_UNIT, [
    'ExecMainStartTimestampMonotonic',
    'ExecMainExitTimestampMonotonic',
    'ExecMainStatus',
  ]);
  const kubelet = await unitProps(vm, KUBELET, ['ActiveEnterTimestampMonotonic', 'ActiveState']);
  const kubeletActiveUs = Number(kubelet.ActiveEnterTimestampMonotonic);
  const agentStartUs = Number(agent.ExecMainStartTimestampMonotonic);
  const agentExitUs = Number(agent.ExecMainExitTimestampMonotonic);
  expect(kubelet.ActiveState).toBe('active');
  expect(agent.ExecMainStatus).toBe('0');
  const hostnameDone = (await events(vm, 'stepFinished')).filter((e) => e.SNO_RELOCATE_STEP === 'hostname').map(mono);
  expect(hostnameDone).toHaveLength(1);
  const [opened] = await events(vm, 'kubeletGateOpened');
  expect(opened).toBeDefined();
  expect(agentStartUs).toBeGreaterThan(0);
  expect(hostnameDone[0]!).toBeGreaterThan(agentStartUs);
  expect(kubeletActiveUs).toBeGreaterThan(hostnameDone[0]!);
  expect(kubeletActiveUs).toBeLessThanOrEqual(mono(opened!));
  expect(agentExitUs).toBeGreaterThanOrEqual(kubeletActiveUs);
  return { kubeletActiveUs, agentStartUs, agentExitUs, hostnameDoneUs: hostnameDone[0]! };
}

/** What every converged node shows: the site network on br-ex, the internal IP, ens3 untouched. */
export async function expectSiteNetwork(vm: Vm): Promise<void> {
  const addrs = JSON.parse(await vm.sshOk('ip -j -4 addr show')) as {
    ifname: string;
    addr_info: { local: string; prefixlen: number }[];
  }[];
  const of = (dev: string) =>
    (addrs.find((l) => l.ifname === dev)?.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`).sort();
  expect(of('br-ex')).toEqual([`${SITE_ADDRESS}/24`, INTERNAL_IP].sort());
  // first: OVN-Kubernetes takes br-ex's first address as the node IP
  expect((addrs.find((l) => l.ifname === 'br-ex')?.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`)[0]).toBe(
    INTERNAL_IP,
  );
  expect(of('ens3')).toEqual(['10.0.2.15/24']);
  expect(of('ens4')).toEqual([]);
  expect(await vm.sshOk('ip -j link show ens4 | grep -o \'"master":"[^"]*"\'')).toContain('"master":"br-ex"');
  expect(await vm.sshOk('ip -4 route show default')).toMatch(/^default via 192\.0\.2\.1 dev br-ex/m);
  expect((await vm.ssh('ping -c 1 -W 5 192.0.2.1')).code).toBe(0);
}

/** A scenario's end: the VM's logs and journal into .artifacts/<name>/, then the VM stopped and removed. */
export async function endVm(vm: Vm | undefined): Promise<void> {
  if (!vm) return;
  await vm.collectArtifacts().catch((e: Error) => console.log(`artifacts: ${e.message}`));
  await vm.dispose();
}

/** A scenario's end: its VM ended (endVm), its node image and scratch folder removed, its timings recorded. */
export async function endScenario(
  vm: Vm | undefined,
  image: NodeImage | undefined,
  dir: string,
  timings?: { scenario: string; timings: Record<string, number | string> },
): Promise<void> {
  await endVm(vm);
  await image?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (timings) await recordTimings(timings.scenario, timings.timings);
}
