/**
 * `npm run bench -- e2e`: the relocation on a real node (the VM of test/e2e), timed from systemd's
 * own timestamps in the guest and from the host's wall clock, medians of several runs.
 *
 *   baseline     the node image without a stick: kernel start to multi-user.target
 *   stick        booted with the stick: kernel start to kubelet active, and the agent's share
 *                (its process from start to exit), so boot and agent are told apart
 *   hotplug      stick plugged in after boot: the kernel seeing it to kubelet active (guest clock),
 *                and the host's plug command to kubelet active
 *   harness      base image cache check, node image build (copy + MachineConfig content + agent),
 *                qemu spawn to ssh; with --cold also build-base.sh into an empty cache
 *
 * E2E_BENCH_RUNS (default 3) runs of each; every VM is disposed of before the next starts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KUBELET_UNIT as KUBELET } from '../src/steps/kubelet.js';
import { events, unitProps } from '../test/e2e/node-checks.js';
import { AGENT_UNIT, buildNodeImage, type NodeImage } from '../test/e2e/node-image.js';
import { newSecret, siteSpec, siteStick } from '../test/e2e/sites.js';
import { ensureBaseImage } from '../test/e2e/base-image.js';
import { bootVm, REPO_ROOT, type Vm } from '../test/e2e/vm.js';
import { reportFigure } from './figures.js';
import { median, printTable } from './lib.js';

const RUNS = Number(process.env.E2E_BENCH_RUNS ?? 3);
const COLD = process.argv.includes('--cold');

const ms = (start: number): number => performance.now() - start;
const monoMs = async (vm: Vm, unit: string, prop: string): Promise<number> =>
  Number((await unitProps(vm, unit, [prop]))[prop]) / 1000;

async function withVm<T>(vm: Vm, fn: (vm: Vm) => Promise<T>): Promise<T> {
  try {
    return await fn(vm);
  } finally {
    await vm.dispose();
  }
}

const waitActive = (vm: Vm, unit: string) =>
  vm.waitFor(`systemctl is-active ${unit}`, (r) => r.stdout.trim() === 'active', 10 * 60_000);

async function baseline(image: NodeImage, i: number) {
  const t = performance.now();
  return withVm(await bootVm({ name: `bench-baseline-${i}`, disk: image.disk }), async (vm) => {
    const sshMs = await vm.waitSsh();
    await waitActive(vm, 'multi-user.target');
    return {
      sshMs,
      hostMs: ms(t),
      guestMultiUserMs: await monoMs(vm, 'multi-user.target', 'ActiveEnterTimestampMonotonic'),
    };
  });
}

async function stick(image: NodeImage, stickImage: string, i: number) {
  const t = performance.now();
  return withVm(await bootVm({ name: `bench-stick-${i}`, disk: image.disk, sticks: [stickImage] }), async (vm) => {
    await vm.waitSsh();
    await waitActive(vm, KUBELET);
    const hostMs = ms(t);
    await vm.waitFor(
      `systemctl show -p ActiveState -p ExecMainExitTimestampMonotonic ${AGENT_UNIT}`,
      (r) => r.stdout.includes('ActiveState=inactive') && !r.stdout.includes('Monotonic=0\n'),
      10 * 60_000,
    );
    const kubeletMs = await monoMs(vm, KUBELET, 'ActiveEnterTimestampMonotonic');
    const agentStart = await monoMs(vm, AGENT_UNIT, 'ExecMainStartTimestampMonotonic');
    const agentExit = await monoMs(vm, AGENT_UNIT, 'ExecMainExitTimestampMonotonic');
    return { hostMs, kubeletMs, agentStartMs: agentStart, agentMs: agentExit - agentStart };
  });
}

async function hotplug(image: NodeImage, stickImage: string, i: number) {
  return withVm(await bootVm({ name: `bench-hotplug-${i}`, disk: image.disk }), async (vm) => {
    await vm.waitSsh();
    await waitActive(vm, 'multi-user.target');
    const t = performance.now();
    await vm.plugStick(stickImage);
    await waitActive(vm, KUBELET);
    const hostMs = ms(t);
    const kubeletMs = await monoMs(vm, KUBELET, 'ActiveEnterTimestampMonotonic');
    const attach = await vm.sshOk('journalctl -b 0 -k -o json --no-pager --grep "USB Mass Storage device detected"');
    const attachMs = Math.max(
      ...attach
        .split('\n')
        .filter(Boolean)
        .map((l) => Number((JSON.parse(l) as { __MONOTONIC_TIMESTAMP: string }).__MONOTONIC_TIMESTAMP) / 1000),
    );
    const [found] = await events(vm, 'configFound');
    return {
      hostMs,
      guestMs: kubeletMs - attachMs,
      attachToConfigMs: Number(found!.__MONOTONIC_TIMESTAMP) / 1000 - attachMs,
    };
  });
}

async function main(): Promise<void> {
  let coldMs: number | undefined;
  if (COLD) {
    const cache = await mkdtemp(join(tmpdir(), 'sno-vm-cache-'));
    const t = performance.now();
    const r = spawnSync('bash', [join(REPO_ROOT, 'test/e2e/build-base.sh')], {
      env: { ...process.env, SNO_RELOCATE_VM_CACHE: cache },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    coldMs = ms(t);
    await rm(cache, { recursive: true, force: true });
    if (r.status !== 0) throw new Error('build-base.sh failed');
  }
  const t0 = performance.now();
  await ensureBaseImage();
  const cacheCheckMs = ms(t0);
  const imageBuilds: number[] = [];
  const stickDir = await mkdtemp(join(tmpdir(), 'sno-bench-e2e-'));
  const stickImage = await siteStick(stickDir, 'site.img', siteSpec(newSecret()));
  const rows = {
    baseline: [] as Awaited<ReturnType<typeof baseline>>[],
    stick: [] as Awaited<ReturnType<typeof stick>>[],
    hotplug: [] as Awaited<ReturnType<typeof hotplug>>[],
  };
  try {
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      const image = await buildNodeImage();
      imageBuilds.push(ms(t));
      try {
        rows.baseline.push(await baseline(image, i));
        rows.stick.push(await stick(image, stickImage, i));
        rows.hotplug.push(await hotplug(image, stickImage, i));
      } finally {
        await image.dispose();
      }
      console.log(`run ${i + 1}/${RUNS} done`);
    }
  } finally {
    await rm(stickDir, { recursive: true, force: true });
  }
  const m = <T>(xs: T[], f: (x: T) => number): number => median(xs.map(f)) / 1000;
  const baseMultiUser = m(rows.baseline, (r) => r.guestMultiUserMs);
  const stickKubelet = m(rows.stick, (r) => r.kubeletMs);
  const agent = m(rows.stick, (r) => r.agentMs);
  printTable(
    `VM end to end, medians of ${RUNS} runs (seconds; guest = systemd monotonic timestamps, host = wall clock)`,
    [
      ['what', 'median s', 'min s', 'max s', 'ratio to baseline'],
      [
        'baseline: kernel -> multi-user.target (guest)',
        baseMultiUser,
        Math.min(...rows.baseline.map((r) => r.guestMultiUserMs)) / 1000,
        Math.max(...rows.baseline.map((r) => r.guestMultiUserMs)) / 1000,
        '1.00',
      ],
      [
        'baseline: qemu spawn -> ssh (host)',
        m(rows.baseline, (r) => r.sshMs),
        Math.min(...rows.baseline.map((r) => r.sshMs)) / 1000,
        Math.max(...rows.baseline.map((r) => r.sshMs)) / 1000,
        '-',
      ],
      [
        'stick: kernel -> kubelet active (guest)',
        stickKubelet,
        Math.min(...rows.stick.map((r) => r.kubeletMs)) / 1000,
        Math.max(...rows.stick.map((r) => r.kubeletMs)) / 1000,
        (stickKubelet / baseMultiUser).toFixed(2),
      ],
      [
        'stick: kernel -> agent start (guest)',
        m(rows.stick, (r) => r.agentStartMs),
        Math.min(...rows.stick.map((r) => r.agentStartMs)) / 1000,
        Math.max(...rows.stick.map((r) => r.agentStartMs)) / 1000,
        '-',
      ],
      [
        'stick: agent process, start -> exit (guest)',
        agent,
        Math.min(...rows.stick.map((r) => r.agentMs)) / 1000,
        Math.max(...rows.stick.map((r) => r.agentMs)) / 1000,
        (agent / baseMultiUser).toFixed(2),
      ],
      [
        'stick: qemu spawn -> kubelet active (host)',
        m(rows.stick, (r) => r.hostMs),
        Math.min(...rows.stick.map((r) => r.hostMs)) / 1000,
        Math.max(...rows.stick.map((r) => r.hostMs)) / 1000,
        '-',
      ],
      [
        'hotplug: stick seen by kernel -> kubelet active (guest)',
        m(rows.hotplug, (r) => r.guestMs),
        Math.min(...rows.hotplug.map((r) => r.guestMs)) / 1000,
        Math.max(...rows.hotplug.map((r) => r.guestMs)) / 1000,
        '-',
      ],
      [
        'hotplug: stick seen -> site-config found (guest)',
        m(rows.hotplug, (r) => r.attachToConfigMs),
        Math.min(...rows.hotplug.map((r) => r.attachToConfigMs)) / 1000,
        Math.max(...rows.hotplug.map((r) => r.attachToConfigMs)) / 1000,
        '-',
      ],
      [
        'hotplug: plug command -> kubelet active (host)',
        m(rows.hotplug, (r) => r.hostMs),
        Math.min(...rows.hotplug.map((r) => r.hostMs)) / 1000,
        Math.max(...rows.hotplug.map((r) => r.hostMs)) / 1000,
        '-',
      ],
    ],
  );
  const s1 = (x: number) => `${x.toFixed(1)} s`;
  reportFigure({
    what: 'VM: boot with the stick to kubelet active (guest clock)',
    measured: `${s1(stickKubelet)} from kernel start; the agent started at ${s1(m(rows.stick, (r) => r.agentStartMs))} and ran ${s1(agent)}`,
    baseline: `the same node without a stick, kernel to multi-user.target: ${s1(baseMultiUser)}`,
  });
  reportFigure({
    what: 'VM: stick hot-plugged to kubelet active',
    measured: `${s1(m(rows.hotplug, (r) => r.hostMs))} from the host's plug command (${s1(m(rows.hotplug, (r) => r.guestMs))} from the guest seeing the device)`,
  });
  if (coldMs !== undefined)
    reportFigure({
      what: 'VM: base image build, empty cache (`--cold`)',
      measured: `${s1(coldMs / 1000)} (cached by key)`,
    });
  printTable('VM harness (seconds)', [
    ['what', 'median s', 'runs'],
    ['base image cache check (warm)', cacheCheckMs / 1000, '1'],
    ['node image build: copy, MachineConfig content, agent', median(imageBuilds) / 1000, String(imageBuilds.length)],
    [
      'base image build, empty cache (cold)',
      coldMs === undefined ? 'not measured: pass --cold' : coldMs / 1000,
      coldMs === undefined ? '0' : '1',
    ],
  ]);
}

await main();
