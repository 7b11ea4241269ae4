/**
 * What the scenarios read back from a running node, over ssh: systemd's unit properties, the
 * journal as JSON, the agent's state file, and snapshots of file trees and of the network.
 */
import { MessageId, type MessageIdName } from '../../src/log/events.js';
import type { Vm } from './vm.js';

export { MessageId };

export const STATE_FILE = '/var/lib/sno-relocate/state.json';
export const NM_CONNECTIONS = '/etc/NetworkManager/system-connections';
/** the trees a run may change, and the only ones: compared whole before and after */
export const NODE_TREES = ['/etc', '/home/core', '/var/lib/kubelet', '/root/.ssh'];

export const shq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** `systemctl show` properties of a unit, as strings. */
export async function unitProps(vm: Vm, unit: string, props: string[]): Promise<Record<string, string>> {
  const out = await vm.sshOk(`systemctl show ${props.map((p) => `-p ${p}`).join(' ')} ${shq(unit)}`);
  const result: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) result[line.slice(0, i)] = line.slice(i + 1);
  }
  for (const p of props) if (!(p in result)) throw new Error(`${vm.name}: systemctl show gave no ${p} for ${unit}`);
  return result;
}

export type JournalEntry = Record<string, string | undefined> & { MESSAGE?: string; __MONOTONIC_TIMESTAMP?: string };

/** Journal entries as JSON objects (binary fields, which journalctl gives as arrays, are skipped). */
export async function journal(vm: Vm, args: string): Promise<JournalEntry[]> {
  const out = await vm.sshOk(`journalctl -o json --no-pager ${args}`, { timeoutMs: 180_000 });
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const raw = JSON.parse(l) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(raw).filter(([, v]) => typeof v === 'string')) as JournalEntry;
    });
}

/** The agent's events with a message id, in this boot (or all boots with boot = 'all'). */
export function events(vm: Vm, name: MessageIdName, boot: '0' | 'all' = '0'): Promise<JournalEntry[]> {
  return journal(vm, `${boot === 'all' ? '-b all' : '-b 0'} MESSAGE_ID=${MessageId[name]}`);
}

/** Waits (polling the journal) for an event of this boot, optionally of one step. */
export async function waitEvent(
  vm: Vm,
  name: MessageIdName,
  opts: { step?: string; timeoutMs?: number } = {},
): Promise<void> {
  const match = `MESSAGE_ID=${MessageId[name]}${opts.step ? ` SNO_RELOCATE_STEP=${opts.step}` : ''}`;
  await vm.waitFor(
    `journalctl -b 0 -q -o cat --no-pager ${match} | grep -q .`,
    (r) => r.code === 0,
    opts.timeoutMs ?? 300_000,
  );
}

/**
 * A condition for waitInGuest: `unit` (of system.slice) is active. Its cgroup is tested first, with
 * a shell builtin, so that systemctl, costly in an emulated guest, runs only once the unit started.
 */
export const unitActive = (unit: string): string =>
  `[ -d /sys/fs/cgroup/system.slice/${unit} ] && systemctl is-active -q ${unit}`;

/**
 * Waits in the guest itself (no ssh round trip per poll) until `condition` (a shell command)
 * succeeds, polling every `intervalS` seconds, then runs `then` there at once: to stop the node at a
 * point of the run. With a `then` that resets the guest, the ssh connection just drops. Each poll
 * forks, and a fork costs an emulated guest about 40 ms of a host core: a poll every 50 ms took two
 * thirds of a core from the boot or agent waited on (bench/guest-waits.ts).
 */
export async function waitInGuest(
  vm: Vm,
  condition: string,
  timeoutMs = 300_000,
  { then, intervalS = 1 }: { then?: string; intervalS?: number } = {},
): Promise<void> {
  const script = `until ${condition}; do sleep ${intervalS}; done${then ? `; ${then}` : ''}`;
  const r = await vm.ssh(`timeout ${Math.ceil(timeoutMs / 1000)} sh -c ${shq(script)}`, {
    timeoutMs: timeoutMs + 30_000,
  });
  if (then === undefined && r.code !== 0)
    throw new Error(
      `${vm.name}: \`${condition}\` did not become true within ${timeoutMs} ms (exit ${r.code}) ${r.stderr}`,
    );
}

export interface StepRecord {
  status: 'running' | 'done' | 'failed';
  attempts: number;
  message?: string;
}
export interface RunState {
  site: string;
  result: string;
  message?: string;
  steps: Record<string, StepRecord>;
}

export async function readState(vm: Vm): Promise<RunState | undefined> {
  const r = await vm.ssh(`cat ${STATE_FILE}`);
  return r.code === 0 ? (JSON.parse(r.stdout) as RunState) : undefined;
}

/**
 * Every file, folder and link under `roots`: type, mode, owner, and the sha256 of a regular
 * file's contents (or a link's target). NetworkManager keyfiles get their uuids numbered in order
 * of appearance, since a profile made again gets a new random uuid.
 */
export async function snapshotTrees(vm: Vm, roots: string[]): Promise<Map<string, string>> {
  const list = await vm.sshOk(
    `find ${roots.map(shq).join(' ')} -xdev \\( -type f -o -type d -o -type l \\) -printf '%y %m %U:%G %p\\t%l\\n' 2>/dev/null; ` +
      `find ${roots.map(shq).join(' ')} -xdev -type f -exec sha256sum {} + 2>/dev/null | sed 's/^/# /'`,
    { timeoutMs: 180_000 },
  );
  const sums = new Map<string, string>();
  const nodes = new Map<string, string>();
  for (const line of list.split('\n')) {
    if (line.startsWith('# ')) {
      const m = /^# ([0-9a-f]{64}) {2}(.*)$/.exec(line);
      if (m) sums.set(m[2]!, m[1]!);
    } else if (line !== '') {
      const [meta, target] = line.split('\t');
      const m = /^(\S) (\d+) (\S+) (.*)$/.exec(meta!);
      if (m) nodes.set(m[4]!, `${m[1]} ${m[2]} ${m[3]}${m[1] === 'l' ? ` -> ${target}` : ''}`);
    }
  }
  const keyfiles = await nmKeyfiles(vm);
  for (const [path, meta] of nodes) {
    if (!meta.startsWith('f ')) continue;
    nodes.set(
      path,
      `${meta} ${keyfiles.has(path) ? `keyfile:\n${keyfiles.get(path)}` : (sums.get(path) ?? '(unreadable)')}`,
    );
  }
  return nodes;
}

/**
 * NetworkManager keyfiles with uuids normalised (uuid-1, uuid-2, ... across all files, by path),
 * and without `timestamp=`, the wall-clock time NetworkManager records at each activation.
 */
export async function nmKeyfiles(vm: Vm): Promise<Map<string, string>> {
  const out = await vm.sshOk(
    `for f in ${NM_CONNECTIONS}/*; do [ -f "$f" ] && printf '==> %s\\n' "$f" && cat "$f"; done; true`,
  );
  const files = new Map<string, string>();
  let current: string | undefined;
  for (const line of out.split('\n')) {
    const header = /^==> (.*)$/.exec(line);
    if (header) {
      current = header[1]!;
      files.set(current, '');
    } else if (current !== undefined) files.set(current, `${files.get(current)}${line}\n`);
  }
  const uuids = new Map<string, string>();
  const normalised = new Map<string, string>();
  for (const path of [...files.keys()].sort()) {
    normalised.set(
      path,
      files
        .get(path)!
        .replace(/^timestamp=\d+\n/m, '')
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (u) => {
          if (!uuids.has(u)) uuids.set(u, `uuid-${uuids.size + 1}`);
          return uuids.get(u)!;
        }),
    );
  }
  return normalised;
}

/** The lines only in a and only in b (a keyfile's changed settings, say), or the two one-liners. */
function changedLines(a: string, b: string): string {
  const la = a.split('\n');
  const lb = b.split('\n');
  if (la.length === 1 && lb.length === 1) return `${a} => ${b}`;
  return [
    ...la.filter((l) => !lb.includes(l)).map((l) => `-${l}`),
    ...lb.filter((l) => !la.includes(l)).map((l) => `+${l}`),
  ].join(' ');
}

/** Lines that differ between two snapshots, for a readable assertion. */
export function diffSnapshots(
  before: Map<string, string>,
  after: Map<string, string>,
  ignore: (path: string) => boolean = () => false,
): string[] {
  const out: string[] = [];
  for (const [p, v] of before) {
    if (ignore(p)) continue;
    if (!after.has(p)) out.push(`- ${p} (${v.split('\n')[0]})`);
    else if (after.get(p) !== v) out.push(`~ ${p}: ${changedLines(v, after.get(p)!)}`);
  }
  for (const [p, v] of after) if (!ignore(p) && !before.has(p)) out.push(`+ ${p} (${v.split('\n')[0]})`);
  return out;
}

export interface NetworkView {
  /** address/prefix per interface, sorted; only the interfaces named */
  addresses: Record<string, string[]>;
  defaultRoutes: string[];
  /** NetworkManager's active profiles: "name:device" */
  active: string[];
}

export async function networkView(vm: Vm, devices: string[]): Promise<NetworkView> {
  const links = JSON.parse(await vm.sshOk('ip -j addr show')) as {
    ifname: string;
    addr_info?: { local: string; prefixlen: number; family: string }[];
  }[];
  const addresses: Record<string, string[]> = {};
  for (const d of devices) {
    const link = links.find((l) => l.ifname === d);
    if (link)
      addresses[d] = (link.addr_info ?? [])
        .filter((a) => a.family === 'inet')
        .map((a) => `${a.local}/${a.prefixlen}`)
        .sort();
  }
  const routes = JSON.parse(await vm.sshOk('ip -j -4 route show default')) as { gateway?: string; dev: string }[];
  const active = (await vm.sshOk('nmcli -t -f NAME,DEVICE connection show --active'))
    .split('\n')
    .filter(Boolean)
    .sort();
  return { addresses, defaultRoutes: routes.map((r) => `${r.gateway ?? '-'} dev ${r.dev}`).sort(), active };
}

/** The node as a user would check it after a run: files, network, hostname, units. */
export interface NodeState {
  files: Map<string, string>;
  network: NetworkView;
  hostname: string;
  units: Record<string, string>;
}

export async function nodeState(vm: Vm, units: string[]): Promise<NodeState> {
  const unitStates: Record<string, string> = {};
  for (const u of units) {
    const p = await unitProps(vm, u, ['ActiveState', 'SubState', 'UnitFileState']);
    unitStates[u] = `${p.ActiveState}/${p.SubState} ${p.UnitFileState}`;
  }
  return {
    files: await snapshotTrees(vm, NODE_TREES),
    network: await networkView(vm, ['br-ex', 'ens3', 'ens4']),
    hostname: (await vm.sshOk('hostnamectl hostname')).trim(),
    units: unitStates,
  };
}
