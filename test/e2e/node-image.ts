/**
 * The node image of the end-to-end suite: the cached base image with the agent installed the way
 * the factory MachineConfigs install it. The MachineConfigs are rendered fresh with
 * scripts/render-machineconfigs.ts, and every storage file, directory, link and systemd unit of
 * their Ignition configs is laid into the image as Ignition would lay it (decoded data: URLs, the
 * same paths, modes and owners; units under /etc/systemd/system, enabled by their [Install]
 * section, or for a unit they only enable (kubelet) the [Install] section of the one on the node,
 * masked or disabled as told). The one thing Ignition would fetch, the agent binary, is
 * copied in from dist/, with the records the binary installer keeps of the image it installed
 * (so at boot the installer finds the image of install.env installed and does nothing).
 *
 * What only the VM needs is added on top and said so here:
 *   - a drop-in running the agent with `--only node`: there is no cluster in the VM; the cluster
 *     steps are exercised against a real API server in test/cluster (and the domain step from the
 *     VM, against one on the host, in clock.test.ts).
 *   - the watcher unit masked, for the same reason: without an API server it would only restart
 *     every few seconds, each start a Node start-up under emulation (test/watch covers it).
 *
 * SNO_RELOCATE_E2E_AGENT names an agent executable to install instead of dist/'s (with
 * SNO_RELOCATE_E2E_MACHINECONFIGS, to run a release's agent and MachineConfigs).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import yaml from 'js-yaml';
import { type DiskEntry, enableUnit, installFiles, readFile as readDiskFile, removeFiles, statPaths } from './disk.js';
import { copyBaseDisk } from './base-image.js';
import { REPO_ROOT } from './vm.js';

export const AGENT_BINARY = '/usr/local/bin/sno-relocate';
/** where sno-relocate-install keeps its records of the installed image and the previous binary */
export const INSTALL_LIB = '/usr/local/lib/sno-relocate';
const INSTALL_ENV = '/etc/sno-relocate/install.env';
export const AGENT_UNIT = 'sno-relocate.service';
/** units the MachineConfigs enable that have nothing to do in a VM without a cluster */
export const VM_MASKED = ['sno-relocate-watch.service'];
const RENDER_SCRIPT = join(REPO_ROOT, 'scripts/render-machineconfigs.ts');
const UNIT_DIR = '/etc/systemd/system';

function run(cmd: string, args: string[], cwd = REPO_ROOT): Promise<string> {
  return new Promise((res, rej) => {
    execFile(cmd, args, { cwd, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) rej(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}${stdout}`));
      else res(stdout);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// the agent build

async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    newest = Math.max(newest, (await stat(join(e.parentPath, e.name))).mtimeMs);
  }
  return newest;
}

/**
 * dist/sno-relocate, built by ./build.sh when it is missing or older than any source file, so the
 * VM always runs the code under test.
 */
export async function ensureAgentBuild(): Promise<string> {
  const given = process.env.SNO_RELOCATE_E2E_AGENT;
  if (given) return given;
  const binary = join(REPO_ROOT, 'dist/sno-relocate');
  const built = await stat(binary).then(
    (s) => s.mtimeMs,
    () => 0,
  );
  const sources = Math.max(
    await newestMtime(join(REPO_ROOT, 'src')),
    (await stat(join(REPO_ROOT, 'package-lock.json'))).mtimeMs,
  );
  if (built < sources) await run('bash', [join(REPO_ROOT, 'build.sh')]);
  return binary;
}

// ---------------------------------------------------------------------------------------------
// MachineConfigs -> image entries

interface IgnitionNode {
  path: string;
  mode?: number;
  user?: { id?: number; name?: string };
  group?: { id?: number; name?: string };
}
interface IgnitionFile extends IgnitionNode {
  contents?: { source?: string; compression?: string };
}
interface IgnitionLink extends IgnitionNode {
  target: string;
}
interface IgnitionUnit {
  name: string;
  enabled?: boolean;
  mask?: boolean;
  contents?: string;
  dropins?: { name: string; contents?: string }[];
}
interface IgnitionConfig {
  passwd?: { users?: { name: string; sshAuthorizedKeys?: string[] }[] };
  storage?: { files?: IgnitionFile[]; directories?: IgnitionNode[]; links?: IgnitionLink[] };
  systemd?: { units?: IgnitionUnit[] };
}
export interface MachineConfig {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { config: IgnitionConfig };
}

/** What the MachineConfigs put on a node, in the shape disk.ts writes. */
export interface NodePayload {
  machineConfigs: string[];
  entries: DiskEntry[];
  /** units to enable, with the targets their [Install] section names */
  enable: { unit: string; targets: string[] }[];
  /** units the MachineConfigs want disabled */
  disable: string[];
}

async function parseMachineConfigs(dir: string): Promise<MachineConfig[]> {
  const out: MachineConfig[] = [];
  for (const name of (await readdir(dir)).filter((n) => /\.ya?ml$/.test(n)).sort()) {
    for (const doc of yaml.loadAll(await readFile(join(dir, name), 'utf8'))) {
      const mc = doc as MachineConfig | null;
      if (mc && (mc as { kind?: string }).kind === 'MachineConfig') out.push(mc);
    }
  }
  if (out.length === 0) throw new Error(`no MachineConfig in ${dir}`);
  return out;
}

/**
 * The MachineConfigs, rendered fresh into a temporary folder; SNO_RELOCATE_E2E_MACHINECONFIGS
 * names a folder of already rendered ones instead (to test a release's MachineConfigs).
 */
export async function renderMachineConfigs(): Promise<MachineConfig[]> {
  const given = process.env.SNO_RELOCATE_E2E_MACHINECONFIGS;
  if (given) return parseMachineConfigs(given);
  if (!(await stat(RENDER_SCRIPT).catch(() => undefined)))
    throw new Error(`${RENDER_SCRIPT} is missing: the node image is built from the rendered MachineConfigs`);
  const dir = await mkdtemp(join(tmpdir(), 'sno-mc-'));
  try {
    await run('npx', ['tsx', RENDER_SCRIPT, dir]);
    return await parseMachineConfigs(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Ignition's data: URL, decoded by the platform's own data: URL support. */
async function decodeSource(file: IgnitionFile): Promise<Buffer> {
  const source = file.contents?.source;
  if (source === undefined) return Buffer.alloc(0);
  if (!source.startsWith('data:'))
    throw new Error(`${file.path}: only data: URLs can be installed offline, got ${source.slice(0, 40)}`);
  if (file.contents?.compression)
    throw new Error(
      `${file.path}: compressed contents (${file.contents.compression}) are not expected in these MachineConfigs`,
    );
  const response = await fetch(source);
  return Buffer.from(await response.arrayBuffer());
}

function owner(n: IgnitionNode): { uid: number; gid: number } {
  // Ignition takes names too; the MachineConfigs of this project use ids or nothing (root)
  for (const [what, o] of [
    ['user', n.user],
    ['group', n.group],
  ] as const) {
    if (o?.name !== undefined && o.name !== 'root')
      throw new Error(`${n.path}: ${what} by name (${o.name}) is not supported offline; use an id`);
  }
  return { uid: n.user?.id ?? 0, gid: n.group?.id ?? 0 };
}

/** The targets a unit's [Install] section names (WantedBy=, RequiredBy=). */
export function installTargets(contents: string): string[] {
  const targets: string[] = [];
  let section = '';
  for (const raw of contents.split('\n')) {
    const line = raw.trim();
    const header = /^\[(.+)\]$/.exec(line);
    if (header) section = header[1]!;
    else if (section === 'Install') {
      const m = /^(WantedBy|RequiredBy)\s*=\s*(.*)$/.exec(line);
      if (m) targets.push(...m[2]!.split(/\s+/).filter(Boolean));
    }
  }
  return targets;
}

export async function machineConfigPayload(mcs: MachineConfig[]): Promise<NodePayload> {
  const entries: DiskEntry[] = [];
  const enable: NodePayload['enable'] = [];
  const disable: string[] = [];
  for (const mc of mcs) {
    const c = mc.spec.config;
    for (const d of c.storage?.directories ?? [])
      entries.push({ path: d.path, type: 'dir', mode: d.mode ?? 0o755, ...owner(d) });
    for (const f of c.storage?.files ?? [])
      entries.push({ path: f.path, mode: f.mode ?? 0o644, contents: await decodeSource(f), ...owner(f) });
    for (const l of c.storage?.links ?? []) entries.push({ path: l.path, type: 'symlink', target: l.target });
    for (const u of c.systemd?.units ?? []) {
      if (u.mask) entries.push({ path: posix.join(UNIT_DIR, u.name), type: 'symlink', target: '/dev/null' });
      else if (u.contents !== undefined)
        entries.push({ path: posix.join(UNIT_DIR, u.name), mode: 0o644, contents: u.contents });
      for (const d of u.dropins ?? []) {
        if (d.contents !== undefined)
          entries.push({ path: posix.join(UNIT_DIR, `${u.name}.d`, d.name), mode: 0o644, contents: d.contents });
      }
      if (u.enabled === true) enable.push({ unit: u.name, targets: installTargets(u.contents ?? '') });
      if (u.enabled === false) disable.push(u.name);
    }
  }
  return { machineConfigs: mcs.map((m) => m.metadata.name), entries, enable, disable };
}

/** ExecStart= lines of a unit file. */
function execStarts(contents: string): string[] {
  return contents
    .split('\n')
    .map((l) => /^ExecStart\s*=\s*(.+)$/.exec(l.trim())?.[1])
    .filter((v): v is string => v !== undefined);
}

/**
 * The VM-only drop-in: the agent's own command line, limited to the node steps, or to the steps
 * `only` names (`--only`) for a VM whose node reaches a test cluster's API server.
 */
export function nodeOnlyDropIn(payload: NodePayload, only = 'node'): DiskEntry {
  const unit = payload.entries.find((e) => e.path === posix.join(UNIT_DIR, AGENT_UNIT));
  if (!unit || !('contents' in unit)) throw new Error(`the MachineConfigs carry no ${AGENT_UNIT}`);
  const starts = execStarts(unit.contents.toString());
  if (starts.length !== 1 || !starts[0]!.includes(AGENT_BINARY))
    throw new Error(`${AGENT_UNIT}: expected one ExecStart running ${AGENT_BINARY}, got ${JSON.stringify(starts)}`);
  return {
    path: posix.join(UNIT_DIR, `${AGENT_UNIT}.d`, '90-vm-node-steps-only.conf'),
    mode: 0o644,
    contents: `# VM end-to-end suite: no cluster in this VM, so the run is limited to ${only}\n[Service]\nExecStart=\nExecStart=${starts[0]} --only ${only}\n`,
  };
}

export interface NodeImage {
  /** raw image with the agent installed; boot it through an overlay (vm.ts default) */
  disk: string;
  payload: NodePayload;
  /** the MachineConfigs the image was built from */
  machineConfigs: MachineConfig[];
  dir: string;
  dispose(): Promise<void>;
}

/**
 * Builds the node image in a new temporary folder: base image copy, MachineConfig content, the
 * agent binary, the VM-only drop-in. About 3-5 s warm (the agent build adds its own time when stale).
 */
export async function buildNodeImage(): Promise<NodeImage> {
  const [binary, mcs] = await Promise.all([ensureAgentBuild(), renderMachineConfigs()]);
  const payload = await machineConfigPayload(mcs);
  const dir = await mkdtemp(join(tmpdir(), 'sno-node-image-'));
  const disk = await copyBaseDisk(join(dir, 'node.raw'));
  const agent = await readFile(binary);
  const installEnv = payload.entries.find((e) => e.path === INSTALL_ENV);
  const image =
    installEnv && 'contents' in installEnv && /^SNO_RELOCATE_IMAGE=(.+)$/m.exec(installEnv.contents.toString());
  await installFiles(disk, [
    ...payload.entries,
    // kubelet's folder, as every OpenShift node has it; node-name writes kubelet-env there
    { path: '/etc/kubernetes', type: 'dir', mode: 0o755 },
    { path: AGENT_BINARY, mode: 0o755, contents: agent },
    ...(image
      ? [
          { path: posix.join(INSTALL_LIB, 'installed-image'), mode: 0o644, contents: `${image[1]}\n` },
          {
            path: posix.join(INSTALL_LIB, 'installed-sha256'),
            mode: 0o644,
            contents: `${createHash('sha256').update(agent).digest('hex')}\n`,
          },
        ]
      : []),
    nodeOnlyDropIn(payload),
    ...VM_MASKED.map((unit) => ({ path: posix.join(UNIT_DIR, unit), type: 'symlink' as const, target: '/dev/null' })),
  ]);
  for (const { unit, targets } of payload.enable) {
    if (VM_MASKED.includes(unit)) continue;
    // a unit the MachineConfigs only enable (kubelet): the [Install] section of the one on the node
    const onNode =
      targets.length > 0
        ? targets
        : installTargets((await readDiskFile(disk, posix.join(UNIT_DIR, unit)))?.toString() ?? '');
    for (const t of onNode) await enableUnit(disk, unit, t);
  }
  for (const unit of payload.disable) {
    const links = ['multi-user.target', 'default.target', 'graphical.target'].map((t) =>
      posix.join(UNIT_DIR, `${t}.wants`, unit),
    );
    const present = await statPaths(disk, links);
    await removeFiles(disk, [...present.keys()]);
  }
  return {
    disk,
    payload,
    machineConfigs: mcs,
    dir,
    dispose: async () => {
      if (process.env.VM_KEEP !== '1') await rm(dir, { recursive: true, force: true });
    },
  };
}
