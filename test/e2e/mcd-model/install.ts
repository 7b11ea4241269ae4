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
 * OpenShift's own MachineConfigs are the ones its templates give a master of this cluster
 * (00-master, 01-master-container-runtime, 01-master-kubelet, from openshift-master.json: every
 * file with its mode and contents, every unit with its contents, enablement and drop-ins, rendered
 * for a single-node cluster on platform None by scripts/openshift-master-templates.ts from the
 * MCO's templates at the release branch), the cluster's pull secret in 00-master's
 * /var/lib/kubelet/config.json (templates/common/_base/files/pull-secret.yaml: `inline: |` with
 * `{{.PullSecret}}`, so the secret and a newline), and the installer's 99-master-ssh (openshift/
 * installer pkg/asset/machines/machineconfig/authorizedkeys.go: user core with the install-config's
 * sshKey), which the cluster admin edits to change the keys. The MachineConfigs the operator's
 * controllers generate for this cluster's default cluster resources are in the fixture too (from
 * scripts/mco-generated-configs.ts): 97- and 98-master-generated-kubelet's
 * /etc/kubernetes/kubelet.conf, the template's with the release's Default feature gates and
 * re-encoded by the controller, which wins over 01-master-kubelet's by name; and
 * 99-master-generated-registries, which declares no file with an empty images config. The cgroups
 * v2 kernel arguments of 97-master-generated-kubelet are not rendered by this model.
 */
import { readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { build } from 'esbuild';
import { type DiskEntry, enableUnit, installFiles, readFile as readDiskFile } from '../disk.js';
import { installTargets, type MachineConfig, machineConfigPayload, VM_MASKED } from '../node-image.js';
import { shq } from '../node-checks.js';
import { factoryTimeSource, type TimeServer } from '../time-server.js';
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

/** The release whose templates give OpenShift's part of the node's rendered config. */
export const CONFIG_RELEASE = 'release-4.18';

interface FixtureFile {
  path: string;
  mode: number;
  machineConfig: string;
  /** absent where the file holds a value of the scenario's (`scenario`) */
  contents?: string;
  scenario?: boolean;
}
interface FixtureUnit {
  machineConfig: string;
  name: string;
  enabled?: boolean;
  mask?: boolean;
  contents?: string;
  dropins: { name: string; contents: string }[];
}
interface TemplateFixture {
  releases: Record<string, { files: FixtureFile[]; units: FixtureUnit[] }>;
}

function templates(release: string): { files: FixtureFile[]; units: FixtureUnit[] } {
  const fixture = JSON.parse(
    readFileSync(new URL('./openshift-master.json', import.meta.url), 'utf8'),
  ) as TemplateFixture;
  const r = fixture.releases[release];
  if (!r) throw new Error(`openshift-master.json has no ${release}`);
  return r;
}

/**
 * Every path OpenShift's rendered master config declares at `release` for a single-node cluster on
 * platform None: its files, the units it gives contents, their drop-ins.
 */
export function openshiftMasterPaths(release: string): string[] {
  const r = templates(release);
  return [
    ...r.files.map((f) => f.path),
    ...r.units.filter((u) => u.contents).map((u) => posix.join(UNIT_DIR, u.name)),
    ...r.units.flatMap((u) => u.dropins.map((d) => posix.join(UNIT_DIR, `${u.name}.d`, d.name))),
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

/**
 * OpenShift's MachineConfigs of a master at CONFIG_RELEASE, as its templates render them for this
 * cluster, with the cluster's pull secret, and core's SSH keys (99-master-ssh).
 */
export function openshiftConfigs(pullSecret: string, sshKeys: readonly string[] = [FACTORY_SSH_KEY]): MachineConfig[] {
  const labels = { 'machineconfiguration.openshift.io/role': 'master' };
  const { files, units } = templates(CONFIG_RELEASE);
  const contents = (f: FixtureFile): string => {
    if (f.contents !== undefined) return f.contents;
    if (f.path === KUBELET_AUTH_FILE) return `${pullSecret}\n`;
    throw new Error(`${f.path}: a value of the cluster's this model does not have`);
  };
  const names = [...new Set([...files, ...units].map((x) => x.machineConfig))].sort();
  return [
    {
      metadata: { name: '99-master-ssh', labels },
      spec: { config: { passwd: { users: [{ name: 'core', sshAuthorizedKeys: [...sshKeys] }] } } },
    },
    ...names.map((name): MachineConfig => ({
      metadata: { name, labels },
      spec: {
        config: {
          storage: {
            files: files
              .filter((f) => f.machineConfig === name)
              .map((f) => ({ path: f.path, mode: f.mode, contents: { source: dataUrl(contents(f)) } })),
          },
          systemd: {
            units: units
              .filter((u) => u.machineConfig === name)
              .map(({ name: unit, enabled, mask, contents: text, dropins }) => ({
                name: unit,
                ...(enabled !== undefined && { enabled }),
                ...(mask !== undefined && { mask }),
                ...(text !== undefined && { contents: text }),
                ...(dropins.length > 0 && { dropins }),
              })),
          },
        },
      },
    })),
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

/*
 * OpenShift's files and units are laid as declared, enabled as declared. What the Debian guest
 * needs beyond them is added under names no config declares, so the daemon never sees it:
 *   - every OpenShift service with contents but kubelet.service is held (HELD_DROP_IN): their
 *     programs (podman, ovs-vsctl, nmstatectl, the daemon's own binary, rpm-ostree) are not in
 *     this guest, and some would rewrite the network the agent configures (configure-ovs.sh,
 *     nmstate-configuration.sh) or the hostname (mco-hostname). Targets are laid as they are.
 *   - kubelet.service is OpenShift's unit with a stand-in's Type and ExecStart (kubeletStandIn),
 *     run with kubelet's own arguments:
 *     its dependencies, drop-ins and environment files stay in force.
 *   - /etc/node-sizing.env, which kubelet.service requires, as the held kubelet-auto-node-size
 *     writes it with node sizing off (dynamic-system-reserved-calc.sh static_node_sizing).
 *   - stand-ins for the units the config names without giving their contents, which RHCOS's
 *     packages provide: CRI-O's (kubelet.service Requires=crio.service) and Open vSwitch's two,
 *     which 00-master enables (PACKAGED_UNITS).
 *   - NetworkManager's plugins as Debian has them: 20-keyfiles.conf asks for ifcfg-rh, a plugin
 *     of Red Hat's NetworkManager only (VM_NM_PLUGINS).
 *   - the group dnsmasq, which RHCOS's dnsmasq package creates and 00-master's /etc/dnsmasq.conf
 *     names (group=dnsmasq); Debian's has the user only.
 */
/** where the stand-in kubelet records the node name it registers under */
export const KUBELET_REGISTERED = '/run/kubelet-standin/node-name';
const KUBELET_STAND_IN_BIN = '/usr/local/libexec/kubelet-standin';
// k8s.io/component-helpers node/util GetHostname: --hostname-override when not empty, else the
// kernel's hostname, trimmed and lowercased; the stand-in "registers" by writing that name down
const KUBELET_STAND_IN_SCRIPT = `#!/bin/sh
# Test only: no kubelet in this VM; takes OpenShift's kubelet arguments and names its node as kubelet
name=
for a in "$@"; do
  case "$a" in --hostname-override=*) name="\${a#--hostname-override=}" ;; esac
done
[ -n "$name" ] || name="$(cat /proc/sys/kernel/hostname)"
mkdir -p ${posix.dirname(KUBELET_REGISTERED)}
printf '%s\\n' "$name" | tr 'A-Z' 'a-z' > ${KUBELET_REGISTERED}
exec sleep infinity
`;

/** OpenShift's kubelet ExecStart with the stand-in in kubelet's place: the same arguments, the same environment. */
function kubeletStandIn(unit: string): string {
  const exec = /^ExecStart=((?:.*\\\n)*.*)$/m.exec(unit)?.[1];
  const args = exec?.split(/\s+\/usr\/bin\/kubelet\s/)[1];
  if (!args) throw new Error("OpenShift's kubelet.service: no ExecStart running /usr/bin/kubelet");
  return `# Test only: no kubelet in this VM; OpenShift's kubelet.service runs a stand-in
[Service]
Type=simple
ExecStart=
ExecStart=${KUBELET_STAND_IN_BIN} ${args}
`;
}
const standIn = (what: string, install: boolean): string =>
  `# Test only: stands in for ${what}, which this VM does not have\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n${install ? '\n[Install]\nWantedBy=multi-user.target\n' : ''}`;
const PACKAGED_UNITS: Record<string, string> = {
  'crio.service': standIn("CRI-O's unit (cri-o package)", false),
  'openvswitch.service': standIn("Open vSwitch's unit (openvswitch package)", true),
  'ovsdb-server.service': standIn("Open vSwitch's database unit (openvswitch package)", true),
};
const PACKAGED_DIR = '/usr/lib/systemd/system';
const NODE_SIZING_ENABLED = '/etc/node-sizing-enabled.env';

/** Debian's own NetworkManager plugins, restored after 20-keyfiles.conf (a later conf.d file wins). */
async function vmNetworkManagerPlugins(disk: string): Promise<DiskEntry> {
  const conf = (await readDiskFile(disk, '/etc/NetworkManager/NetworkManager.conf'))?.toString() ?? '';
  const plugins = /^plugins=(.*)$/m.exec(conf)?.[1];
  if (!plugins) throw new Error('the node image has no NetworkManager plugins= line');
  return {
    path: '/etc/NetworkManager/conf.d/99-vm-debian-plugins.conf',
    mode: 0o644,
    contents: `# Test only: Debian's NetworkManager has no ifcfg-rh plugin (20-keyfiles.conf)\n[main]\nplugins=${plugins}\n`,
  };
}

/** /etc/group with the group dnsmasq, as RHCOS's dnsmasq package makes it (a free system gid). */
async function vmDnsmasqGroup(disk: string): Promise<DiskEntry[]> {
  const group = (await readDiskFile(disk, '/etc/group'))?.toString() ?? '';
  if (/^dnsmasq:/m.test(group)) return [];
  const used = new Set(group.split('\n').map((l) => Number(l.split(':')[2])));
  let gid = 999;
  while (used.has(gid)) gid--;
  return [{ path: '/etc/group', mode: 0o644, contents: `${group.trimEnd()}\ndnsmasq:x:${gid}:\n` }];
}

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
 * OpenShift's kubelet-dependencies.target wants chrony-wait.service, which holds kubelet until the
 * clock's first sync: the factory's NTP source is `timeServer` (boot with `uplinkToHost`).
 */
export async function installMcdModel(
  disk: string,
  projectConfigs: MachineConfig[],
  factoryPullSecret: string,
  release: Release,
  timeServer: TimeServer,
): Promise<FactoryNode> {
  const render = (name: string, pullSecret: string, sshKeys?: readonly string[]) =>
    renderConfig(name, [...openshiftConfigs(pullSecret, sshKeys), ...projectConfigs]);
  const factory = render('rendered-master-factory', factoryPullSecret);
  const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
  const openshift = renderConfig('openshift', openshiftConfigs(factoryPullSecret));
  const declared = await machineConfigPayload([openshift as MachineConfig]);
  const openshiftUnits = openshift.spec.config.systemd?.units ?? [];
  const held = [
    ...openshiftUnits.filter((u) => u.contents && u.name.endsWith('.service') && u.name !== 'kubelet.service'),
    ...(factory.spec.config.systemd?.units ?? []).filter((u) => VM_MASKED.includes(u.name) && u.contents),
  ];
  const sizing = (openshift.spec.config.storage?.files ?? []).find((f) => f.path === NODE_SIZING_ENABLED);
  const sizingEnv = decodeURIComponent(sizing?.contents?.source?.replace(/^data:,/, '') ?? '');
  if (!/^NODE_SIZING_ENABLED=false$/m.test(sizingEnv))
    throw new Error(`${NODE_SIZING_ENABLED}: the stand-in for kubelet-auto-node-size knows static sizing only`);
  const packaged = Object.keys(PACKAGED_UNITS).filter((n) => openshiftUnits.some((u) => u.name === n && !u.contents));
  const entries: DiskEntry[] = [
    ...declared.entries,
    // the project's units the node image masks, laid as declared
    ...held
      .filter((u) => VM_MASKED.includes(u.name))
      .map((u): DiskEntry => ({ path: posix.join(UNIT_DIR, u.name), mode: 0o644, contents: u.contents! })),
    ...held.map((u): DiskEntry => ({
      path: posix.join(UNIT_DIR, `${u.name}.d`, '90-vm-no-cluster.conf'),
      mode: 0o644,
      contents: HELD_DROP_IN,
    })),
    {
      path: posix.join(UNIT_DIR, 'kubelet.service.d', '90-vm-stand-in.conf'),
      mode: 0o644,
      contents: kubeletStandIn(openshiftUnits.find((u) => u.name === 'kubelet.service')?.contents ?? ''),
    },
    { path: KUBELET_STAND_IN_BIN, mode: 0o755, contents: KUBELET_STAND_IN_SCRIPT },
    { path: '/etc/node-sizing.env', mode: 0o644, contents: sizingEnv.replace(/^NODE_SIZING_ENABLED=.*\n/m, '') },
    ...packaged.map((n): DiskEntry => ({
      path: posix.join(PACKAGED_DIR, n),
      mode: 0o644,
      contents: PACKAGED_UNITS[n]!,
    })),
    await vmNetworkManagerPlugins(disk),
    factoryTimeSource(timeServer),
    ...(await vmDnsmasqGroup(disk)),
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
  for (const { unit, targets } of declared.enable)
    for (const t of targets.length > 0 ? targets : installTargets(PACKAGED_UNITS[unit] ?? ''))
      await enableUnit(disk, unit, t);
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
