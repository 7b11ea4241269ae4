/**
 * The host side of the machine-config daemon model (daemon.ts): the rendered configs, as the
 * Machine Config Operator's controller renders them, the model laid into a node image, and what a
 * test does with it in a running VM (drop a new rendered config, switch the release, read the
 * node's state and events).
 *
 * Rendering: MCO pkg/controller/common/helpers.go:81-145 MergeMachineConfigs (release-4.17 and
 * release-4.18 alike): the pool's MachineConfigs sorted by name, each merged onto the ones before
 * it with Ignition's ign3.Merge (coreos/ignition config/merge: keyed lists, files by path, units
 * and drop-ins by name, are merged entry by entry, the later config's fields winning where it
 * sets them). So `{name: kubelet.service, enabled: false}` from a later config keeps the contents
 * of OpenShift's kubelet unit and overrides only its enablement. Files get overwrite: true.
 *
 * The passwd section merges the same way: users by name, and a user's sshAuthorizedKeys, a list of
 * plain values, keeps the parent's keys and adds the child's new ones (coreos/ignition
 * config/merge/merge.go, lists without a key field merged by value).
 *
 * OpenShift's own MachineConfigs are represented by what of them touches the node parts the
 * project's MachineConfigs meet: 00-master's pull secret (templates/common/_base/files/
 * pull-secret.yaml: /var/lib/kubelet/config.json, 0600, the cluster pull secret) and
 * 01-master-kubelet's kubelet.service (templates/master/01-master-kubelet/_base/units/
 * kubelet.service.yaml: enabled: true; its contents here are the VM's stand-in kubelet unit), and
 * the installer's 99-master-ssh (openshift/installer pkg/asset/machines/machineconfig/authorizedkeys.go:
 * user core with the install-config's sshKey), which the cluster admin edits to change the keys.
 */
import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { build } from 'esbuild';
import { type DiskEntry, enableUnit, installFiles, readFile as readDiskFile } from '../disk.js';
import { installTargets, type MachineConfig, VM_MASKED } from '../node-image.js';
import { shq } from '../node-checks.js';
import type { Vm } from '../vm.js';
import {
  CURRENT_CONFIG_FILE,
  DESIRED_FILE,
  EVENTS_FILE,
  FORCE_FILE,
  type IgnConfig,
  type IgnFile,
  type IgnUnit,
  type IgnUser,
  type McdEvent,
  MODEL_DIR,
  MODEL_UNIT,
  NODE_FILE,
  type Release,
  RELEASE_FILE,
  type RenderedConfig,
  CURRENT_KEY,
  DESIRED_KEY,
  STATE_KEY,
  REASON_KEY,
} from './ignition.js';

const DAEMON = '/usr/local/libexec/mcd-model.mjs';

interface TemplateFixture {
  releases: Record<
    string,
    { files: { path: string }[]; units: { name: string; contents?: boolean; dropins: string[] }[] }
  >;
}

/**
 * Every path OpenShift's rendered master config declares at `release` for a single-node cluster on
 * platform None (openshift-master.json, written by scripts/openshift-master-templates.ts from the
 * machine-config operator's templates): its files, the units it gives contents, their drop-ins.
 */
export function openshiftMasterPaths(release: string): string[] {
  const fixture = JSON.parse(
    readFileSync(new URL('./openshift-master.json', import.meta.url), 'utf8'),
  ) as TemplateFixture;
  const r = fixture.releases[release];
  if (!r) throw new Error(`openshift-master.json has no ${release}`);
  return [
    ...r.files.map((f) => f.path),
    ...r.units.filter((u) => u.contents).map((u) => posix.join(UNIT_DIR, u.name)),
    ...r.units.flatMap((u) => u.dropins.map((d) => posix.join(UNIT_DIR, `${u.name}.d`, d))),
  ];
}
const UNIT_DIR = '/etc/systemd/system';
export const KUBELET_AUTH_FILE = '/var/lib/kubelet/config.json';

// ---------------------------------------------------------------------------------------------
// rendering

type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => typeof v === 'object' && v !== null && !Array.isArray(v);

/** ign3.Merge of one entry: the child's fields win where set, nested structs merged the same way. */
function mergeEntry<T extends object>(parent: T, child: T): T {
  const out: Plain = { ...(parent as Plain) };
  for (const [k, v] of Object.entries(child as Plain)) {
    if (v === undefined) continue;
    const p = out[k];
    if (k === 'dropins' && Array.isArray(p) && Array.isArray(v)) out[k] = mergeKeyed(p, v, 'name');
    else out[k] = isPlain(p) && isPlain(v) ? mergeEntry(p, v) : v;
  }
  return out as T;
}

/** ign3.Merge of a keyed list: entries with the same key merged in place, new ones appended. */
function mergeKeyed<T extends object>(parent: T[], child: T[], key: keyof T): T[] {
  const out = [...parent];
  for (const c of child) {
    const i = out.findIndex((p) => p[key] === c[key]);
    if (i >= 0) out[i] = mergeEntry(out[i]!, c);
    else out.push(c);
  }
  return out;
}

/** ign3.Merge of passwd.users: by name; sshAuthorizedKeys by value, the parent's first. */
function mergeUsers(parent: IgnUser[], child: IgnUser[]): IgnUser[] {
  const out = [...parent];
  for (const c of child) {
    const i = out.findIndex((p) => p.name === c.name);
    if (i < 0) {
      out.push(c);
      continue;
    }
    const keys = [...(out[i]!.sshAuthorizedKeys ?? [])];
    for (const k of c.sshAuthorizedKeys ?? []) if (!keys.includes(k)) keys.push(k);
    out[i] = { ...out[i]!, ...c, ...(keys.length > 0 && { sshAuthorizedKeys: keys }) };
  }
  return out;
}

/** The rendered config of a pool: its MachineConfigs merged in name order (MergeMachineConfigs). */
export function renderConfig(name: string, mcs: MachineConfig[]): RenderedConfig {
  let fileList: IgnFile[] = [];
  let unitList: IgnUnit[] = [];
  let userList: IgnUser[] = [];
  for (const mc of [...mcs].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
    const c = mc.spec.config;
    if (c.storage?.directories?.length || c.storage?.links?.length)
      throw new Error(`${mc.metadata.name}: directories and links are not rendered by this model`);
    fileList = mergeKeyed(fileList, (c.storage?.files ?? []) as IgnFile[], 'path');
    unitList = mergeKeyed(unitList, (c.systemd?.units ?? []) as IgnUnit[], 'name');
    userList = mergeUsers(userList, (c.passwd?.users ?? []) as IgnUser[]);
  }
  const config: IgnConfig = {
    ignition: { version: '3.4.0' },
    ...(userList.length > 0 && { passwd: { users: userList } }),
    storage: { files: fileList.map((f) => ({ ...f, overwrite: f.overwrite ?? true })) },
    systemd: { units: unitList },
  };
  return { metadata: { name }, spec: { config } };
}

const dataUrl = (text: string): string => `data:,${encodeURIComponent(text)}`;

/** The key the factory's install-config gave core: the installer's 99-master-ssh. */
export const FACTORY_SSH_KEY =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHVhkPb1l2l7yV0Hm4GkD0sZ3o0yXk2v0m1dWq8pYt4N factory@install-config';

/** OpenShift's parts of the rendered config: the cluster pull secret, kubelet.service, core's SSH keys. */
export function openshiftConfigs(
  kubeletUnit: string,
  pullSecret: string,
  sshKeys: readonly string[] = [FACTORY_SSH_KEY],
): MachineConfig[] {
  const labels = { 'machineconfiguration.openshift.io/role': 'master' };
  return [
    {
      metadata: { name: '99-master-ssh', labels },
      spec: { config: { passwd: { users: [{ name: 'core', sshAuthorizedKeys: [...sshKeys] }] } } },
    },
    {
      metadata: { name: '00-master', labels },
      spec: {
        config: {
          storage: { files: [{ path: KUBELET_AUTH_FILE, mode: 0o600, contents: { source: dataUrl(pullSecret) } }] },
        },
      },
    },
    {
      metadata: { name: '01-master-kubelet', labels },
      spec: { config: { systemd: { units: [{ name: 'kubelet.service', enabled: true, contents: kubeletUnit }] } } },
    },
  ];
}

/** A registry auth file as the cluster's pull secret holds it (the MCO writes its bytes as they are). */
export const pullSecretJson = (auths: Record<string, { auth: string }>): string => JSON.stringify({ auths });

// ---------------------------------------------------------------------------------------------
// the node image

async function bundleDaemon(): Promise<string> {
  const out = await build({
    entryPoints: [new URL('./daemon.ts', import.meta.url).pathname],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    write: false,
    logLevel: 'warning',
  });
  return out.outputFiles[0]!.text;
}

const MODEL_UNIT_TEXT = `# Test only: a model of the machine-config daemon (test/e2e/mcd-model/daemon.ts)
[Unit]
Description=machine-config daemon model
After=kubelet.service

[Service]
Type=exec
ExecStart=/usr/local/bin/node ${DAEMON}
# the daemon's pod is restarted when it fails
Restart=on-failure
RestartSec=5
`;

// The daemon is a pod: it runs once kubelet runs. The stand-in kubelet starts it, as the real one
// starts the daemon's pod; a kubelet held by the gate (its condition unmet) starts nothing.
const KUBELET_STARTS_MODEL = `# Test only: the stand-in kubelet runs the machine-config daemon as kubelet runs its pod
[Service]
ExecStartPost=/bin/systemctl --no-block start ${MODEL_UNIT}
`;

// The node image masks the units that have nothing to do in a VM without a cluster (the watcher).
// The daemon checks every declared unit file, and a mask in its place is drift; so with the model
// such a unit is laid as declared, enabled, and held by a drop-in whose condition is never met.
// (Enabled, the watcher's After=sno-relocate.service orders multi-user.target after the agent's
// run, as on a real node: the scenarios wait for kubelet's job, never for multi-user.target.)
const HELD_DROP_IN = `# Test only: no cluster in this VM, so nothing for this unit to do
[Unit]
ConditionPathExists=/nonexistent/sno-relocate-vm-cluster
`;

/** /home/core/.ssh/authorized_keys.d/ignition as Ignition and the daemon leave it: core's, 0700/0600. */
function coreSshEntries(keys: string): DiskEntry[] {
  const owner = { uid: 1000, gid: 1000 };
  return [
    { path: '/home/core/.ssh', type: 'dir', mode: 0o700, ...owner },
    { path: '/home/core/.ssh/authorized_keys.d', type: 'dir', mode: 0o700, ...owner },
    { path: '/home/core/.ssh/authorized_keys.d/ignition', mode: 0o600, contents: keys, ...owner },
  ];
}

export interface FactoryNode {
  /** the factory's rendered config: what the daemon applied at the factory */
  factory: RenderedConfig;
  /**
   * the config from OpenShift's MachineConfigs and the project's: re-render with another pull
   * secret, or with other keys in 99-master-ssh (default: the factory's)
   */
  render(name: string, pullSecret: string, sshKeys?: readonly string[]): RenderedConfig;
}

/**
 * Lays the model into a node image as a factory node has it: the rendered config of the project's
 * MachineConfigs and OpenShift's applied (the pull secret written, kubelet's unit as on the node),
 * the node Done in that config, and the daemon started by kubelet. `release` picks the daemon.
 */
export async function installMcdModel(
  disk: string,
  projectConfigs: MachineConfig[],
  factoryPullSecret: string,
  release: Release,
): Promise<FactoryNode> {
  const kubeletUnit = (await readDiskFile(disk, posix.join(UNIT_DIR, 'kubelet.service')))?.toString();
  if (kubeletUnit === undefined) throw new Error('the node image has no kubelet.service');
  const render = (name: string, pullSecret: string, sshKeys?: readonly string[]) =>
    renderConfig(name, [...openshiftConfigs(kubeletUnit, pullSecret, sshKeys), ...projectConfigs]);
  const factory = render('rendered-master-factory', factoryPullSecret);
  const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
  const held = (factory.spec.config.systemd?.units ?? []).filter((u) => VM_MASKED.includes(u.name) && u.contents);
  const entries: DiskEntry[] = [
    ...held.flatMap((u): DiskEntry[] => [
      { path: posix.join(UNIT_DIR, u.name), mode: 0o644, contents: u.contents! },
      { path: posix.join(UNIT_DIR, `${u.name}.d`, '90-vm-no-cluster.conf'), mode: 0o644, contents: HELD_DROP_IN },
    ]),
    { path: KUBELET_AUTH_FILE, mode: 0o600, contents: factoryPullSecret },
    // Ignition's first boot wrote the installer's key where RHCOS 9 reads it (ssh-key-dir)
    ...coreSshEntries(`${FACTORY_SSH_KEY}\n`),
    { path: DAEMON, mode: 0o644, contents: await bundleDaemon() },
    { path: posix.join(UNIT_DIR, MODEL_UNIT), mode: 0o644, contents: MODEL_UNIT_TEXT },
    {
      path: posix.join(UNIT_DIR, 'kubelet.service.d', '99-mcd-model.conf'),
      mode: 0o644,
      contents: KUBELET_STARTS_MODEL,
    },
    { path: MODEL_DIR, type: 'dir', mode: 0o700 },
    { path: RELEASE_FILE, contents: `${release}\n` },
    { path: CURRENT_CONFIG_FILE, mode: 0o644, contents: JSON.stringify(factory) },
    { path: DESIRED_FILE, contents: json(factory) },
    { path: posix.join(MODEL_DIR, 'configs', `${factory.metadata.name}.json`), contents: json(factory) },
    {
      path: NODE_FILE,
      contents: json({
        [CURRENT_KEY]: factory.metadata.name,
        [DESIRED_KEY]: factory.metadata.name,
        [STATE_KEY]: 'Done',
        [REASON_KEY]: '',
      }),
    },
  ];
  await installFiles(disk, entries);
  for (const u of held) for (const t of installTargets(u.contents!)) if (u.enabled) await enableUnit(disk, u.name, t);
  return { factory, render };
}

// ---------------------------------------------------------------------------------------------
// in the running VM

export interface McdNode {
  state: string;
  reason: string;
  currentConfig: string;
  desiredConfig: string;
}

export async function mcdNode(vm: Vm): Promise<McdNode> {
  const a = JSON.parse(await vm.sshOk(`cat ${NODE_FILE}`)) as Record<string, string>;
  return {
    state: a[STATE_KEY] ?? '',
    reason: a[REASON_KEY] ?? '',
    currentConfig: a[CURRENT_KEY] ?? '',
    desiredConfig: a[DESIRED_KEY] ?? '',
  };
}

export async function mcdEvents(vm: Vm): Promise<McdEvent[]> {
  const out = await vm.sshOk(`cat ${EVENTS_FILE} 2>/dev/null; true`);
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as McdEvent);
}

/** The controller's side of an update: the pool's new rendered config becomes the node's desired one. */
export async function dropConfig(vm: Vm, mc: RenderedConfig): Promise<void> {
  await vm.sshOk(`cat > ${DESIRED_FILE}.new && mv ${DESIRED_FILE}.new ${DESIRED_FILE}`, { input: JSON.stringify(mc) });
}

/** Runs the other release's daemon from now on: a new daemon pod, which starts with checkStateOnFirstRun. */
export async function switchRelease(vm: Vm, release: Release): Promise<void> {
  await vm.sshOk(`echo ${release} > ${RELEASE_FILE} && systemctl restart ${MODEL_UNIT}`);
}

/** The force file, as an admin creates it to get past a config drift. */
export const touchForceFile = (vm: Vm): Promise<string> => vm.sshOk(`touch ${FORCE_FILE}`);

/**
 * Waits until the daemon has settled on `config`: the node Done in it, or Degraded; returns the
 * node. Fails when the model stops for something it does not model (exit 70).
 */
export async function waitMcdSettled(vm: Vm, config: string, timeoutMs = 300_000): Promise<McdNode> {
  const r = await vm.waitFor(
    `cat ${NODE_FILE}; echo; systemctl show -p ExecMainStatus -p ActiveState ${MODEL_UNIT}`,
    (x) =>
      /ExecMainStatus=70/.test(x.stdout) ||
      /"machineconfiguration.openshift.io\/state": "Degraded"/.test(x.stdout) ||
      (x.stdout.includes(`"${CURRENT_KEY}": "${config}"`) && x.stdout.includes(`"${STATE_KEY}": "Done"`)),
    timeoutMs,
  );
  if (/ExecMainStatus=70/.test(r.stdout)) {
    const tail = await vm.ssh(`journalctl -u ${MODEL_UNIT} -n 30 --no-pager`);
    throw new Error(`${vm.name}: the machine-config daemon model stopped: ${tail.stdout}`);
  }
  return mcdNode(vm);
}

/** The daemon's journal of this boot, for an assertion message. */
export const mcdJournal = async (vm: Vm): Promise<string> =>
  (await vm.ssh(`journalctl -b 0 -u ${shq(MODEL_UNIT)} -o cat --no-pager | tail -n 40`)).stdout;

/**
 * Waits until the daemon now running has finished its start (checkStateOnFirstRun): validated, or
 * Degraded; returns the node.
 */
export async function waitMcdStarted(vm: Vm, timeoutMs = 300_000): Promise<McdNode> {
  const r = await vm.waitFor(
    `journalctl -o cat --no-pager _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value ${MODEL_UNIT}) | ` +
      `grep -E -m1 '^(Validated on-disk state|Marking Degraded|model: not modelled)'`,
    (x) => x.code === 0,
    timeoutMs,
  );
  if (r.stdout.startsWith('model: not modelled')) throw new Error(`${vm.name}: ${r.stdout}${await mcdJournal(vm)}`);
  return mcdNode(vm);
}
