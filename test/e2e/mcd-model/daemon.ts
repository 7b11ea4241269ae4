/**
 * A model of OpenShift's machine-config daemon (MCD), run in the VM by mcd-model.service, for the
 * parts that decide whether a node sno-relocate has relocated stays as its rendered MachineConfig
 * says: applying a config update, the unit enable/disable rules, the on-disk validation at start,
 * before each update and on every drift-monitor event, the force file, and the Degraded state.
 *
 * Sources, openshift/machine-config-operator (MCO) at the release branch heads read:
 *   release-4.17 @3bdd678e8 and release-4.18 @f313997e0 (cited as 4.17: / 4.18: file:line; where
 *   both agree, 4.18's lines). The release is read from RELEASE_FILE at start (default 4.18).
 *   Z-streams: the enablement check (checkUnitEnabled) and writing only the units added or changed
 *   (OCPBUGS-58023/74692) reached release-4.18 with the cherry-pick dd559ec99 on 2026-03-11; the
 *   4.18.z builds before it validate and write units as 4.17 does (`release-4.18-before-dd559ec99`).
 *   release-4.14 @00b2e0b1c, 4.15 @1ffa8341f, 4.16 @7327bb235 have the 4.17 rules for what is
 *   modelled here: the same work queue (4.14 daemon.go:174-178, 318; 4.16 :201-205, 380), the same
 *   updateSSHKeys, cleanSSHKeyPaths and removeNonIgnitionKeyPathFragments (4.14 update.go:1715,
 *   1816, 1834; 4.16 :2314, 2415, 2433; bodies identical to 4.18's), no checkUnitEnabled.
 *
 * Where the VM differs from a cluster, and how the model stands in:
 *   - node annotations (state, reason, currentConfig, desiredConfig) are NODE_FILE; events are
 *     lines of EVENTS_FILE; the MachineConfig lister is MODEL_DIR/configs/<name>.json; the node's
 *     desiredConfig annotation changes when the test drops a rendered config at DESIRED_FILE (the
 *     controller's write, seen through fs.watch). Every change of the node's annotations, the
 *     daemon's own included, is a node update its informer turns into a rate-limited sync.
 *   - the daemon runs as a pod, so it starts only once kubelet runs: the stand-in kubelet starts
 *     this unit (install.ts).
 *   - not modelled, and refused when a config needs them, rather than pretended: OS image, kernel
 *     arguments, extensions, FIPS, password hashes, compressed file contents, stale-data deletion
 *     (an update removing a file or unit), the CRI-O reload/restart actions, drains (a single-node
 *     cluster never drains: 4.18 pkg/daemon/drain.go:27-34). The checks of the OS image and the
 *     kernel arguments in validateOnDiskStateImpl (4.18 daemon.go:2547-2561) pass trivially on a
 *     node whose config names no osImageURL and no kargs, as here.
 *   - createOrigFile (file_writers.go:75) backs up files an RPM owns before the first write; none
 *     of the declared files is owned by a package in the VM, so there is nothing to back up.
 *   - the OS is RHCOS 9 (useNewSSHKeyPath, update.go:2667-2670): SSH keys go to
 *     /home/core/.ssh/authorized_keys.d/ignition.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  watch,
  writeFileSync,
  appendFileSync,
  type FSWatcher,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  CURRENT_CONFIG_FILE,
  CURRENT_KEY,
  DESIRED_FILE,
  DESIRED_KEY,
  EVENTS_FILE,
  FORCE_FILE,
  type IgnConfig,
  type IgnDropin,
  type IgnFile,
  type IgnUnit,
  type IgnUser,
  type McdEvent,
  MODEL_DIR,
  NODE_FILE,
  REASON_KEY,
  type Release,
  RELEASE_FILE,
  RELEASES,
  type RenderedConfig,
  STATE_KEY,
} from './ignition.js';

// 4.18 update.go:50-53
const DEFAULT_DIRECTORY_PERMISSIONS = 0o755;
const DEFAULT_FILE_PERMISSIONS = 0o644;
// 4.18 daemon.go pathSystemd, pathDevNull
const PATH_SYSTEMD = '/etc/systemd/system';
const PATH_DEV_NULL = '/dev/null';
const CONFIGS_DIR = join(MODEL_DIR, 'configs');
const BOOT_ID = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();

const release: Release = (() => {
  const text = existsSync(RELEASE_FILE) ? readFileSync(RELEASE_FILE, 'utf8').trim() : 'release-4.18';
  if (!(RELEASES as readonly string[]).includes(text)) throw new Error(`${RELEASE_FILE}: unknown release ${text}`);
  return text as Release;
})();
/** 4.18 since dd559ec99: checkUnitEnabled, and only the units added or changed are written */
const unitsByDiff = release === 'release-4.18';

const log = (msg: string): void => console.log(msg);

// ---------------------------------------------------------------------------------------------
// errors: the daemon's error types, whose message is the Degraded reason

/** 4.18 config_drift_monitor.go:20-33: configDriftErr wraps fileConfigDriftErr / unitConfigDriftErr. */
class ConfigDriftError extends Error {}
/** 4.18 daemon.go:617-619 */
class UnreconcilableError extends Error {}
/** what this model does not do (see the header); a config needing it stops the model, loudly */
class NotModelledError extends Error {}

const errMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));

// ---------------------------------------------------------------------------------------------
// the node and its events (the cluster side of the daemon)

type Annotations = Record<string, string>;

function readJson<T>(path: string): T | undefined {
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as T) : undefined;
}

function writeJsonAtomic(path: string, value: unknown): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
  renameSync(tmp, path);
}

const readNode = (): Annotations => readJson<Annotations>(NODE_FILE) ?? {};

function setAnnotations(annos: Annotations): void {
  const before = readNode();
  const after = { ...before, ...annos };
  if (isDeepStrictEqual(before, after)) return; // a patch that changes nothing is no node update
  writeJsonAtomic(NODE_FILE, after);
  // 4.18 daemon.go:379-382, 2325-2331, 897-904: the node informer's update handler, AddRateLimited
  addRateLimited();
}

/** nodeWriter.Eventf */
function event(type: McdEvent['type'], reason: string, message: string): void {
  const e: McdEvent = { type, reason, message, boot: BOOT_ID };
  appendFileSync(EVENTS_FILE, `${JSON.stringify(e)}\n`);
  log(`event ${type} ${reason}: ${message}`);
}

/** 4.18 writer.go:230-250 SetDegraded: the reason is the error, cut at 2000 characters */
function setDegraded(err: unknown): void {
  log(`Marking Degraded due to: ${JSON.stringify(errMessage(err))}`);
  setAnnotations({ [STATE_KEY]: 'Degraded', [REASON_KEY]: errMessage(err).slice(0, 2000) });
}

/** 4.18 daemon.go:621-631 updateErrorState */
function updateErrorState(err: unknown): void {
  if (err instanceof UnreconcilableError)
    setAnnotations({ [STATE_KEY]: 'Unreconcilable', [REASON_KEY]: errMessage(err).slice(0, 2000) });
  else setDegraded(err);
}

/** the MachineConfig lister: every config the node has been told about, by name */
function getConfig(name: string): RenderedConfig {
  const mc = readJson<RenderedConfig>(join(CONFIGS_DIR, `${name}.json`));
  if (!mc) throw new Error(`machineconfig.machineconfiguration.openshift.io "${name}" not found`);
  return mc;
}

/** The test's drop: the desired config enters the lister and the node's desiredConfig annotation. */
function observeDesired(): void {
  const mc = readJson<RenderedConfig>(DESIRED_FILE);
  if (!mc) return;
  mkdirSync(CONFIGS_DIR, { recursive: true });
  const known = readJson<RenderedConfig>(join(CONFIGS_DIR, `${mc.metadata.name}.json`));
  if (!known) writeJsonAtomic(join(CONFIGS_DIR, `${mc.metadata.name}.json`), mc);
  if (readNode()[DESIRED_KEY] !== mc.metadata.name) setAnnotations({ [DESIRED_KEY]: mc.metadata.name });
}

/** 4.18 daemon.go getCurrentConfigOnDisk */
const getCurrentConfigOnDisk = (): RenderedConfig | undefined => readJson<RenderedConfig>(CURRENT_CONFIG_FILE);

/** 4.18 daemon.go:2728-2734 forceFileExists */
const forceFileExists = (): boolean => existsSync(FORCE_FILE);

// ---------------------------------------------------------------------------------------------
// Ignition contents

/** ctrlcommon.DecodeIgnitionFileContents, for data: URLs (the only source a MachineConfig here has). */
function decodeContents(f: IgnFile): Buffer {
  const source = f.contents?.source;
  if (source === undefined) return Buffer.alloc(0);
  if (f.contents?.compression) throw new NotModelledError(`${f.path}: compressed contents`);
  const m = /^data:([^,]*),(.*)$/s.exec(source);
  if (!m) throw new NotModelledError(`${f.path}: a source other than a data: URL`);
  return m[1]!.endsWith(';base64') ? Buffer.from(m[2]!, 'base64') : Buffer.from(decodeURIComponent(m[2]!), 'utf8');
}

const files = (c: IgnConfig): IgnFile[] => c.storage?.files ?? [];
const units = (c: IgnConfig): IgnUnit[] => c.systemd?.units ?? [];
const unitPath = (u: IgnUnit): string => join(PATH_SYSTEMD, u.name);
const dropinPath = (u: IgnUnit, d: IgnDropin): string => join(PATH_SYSTEMD, `${u.name}.d`, d.name);

// ---------------------------------------------------------------------------------------------
// on-disk validation: 4.17/4.18 pkg/daemon/on_disk_validation.go

// Go's os.FileMode bits and String() (io/fs), for the mode-mismatch message
const GO_MODE_DIR = 2 ** 31;
const GO_MODE_SYMLINK = 2 ** 27;
function goFileMode(st: { mode: number; isDirectory(): boolean; isSymbolicLink(): boolean }): number {
  const perm = st.mode & 0o777;
  if (st.isDirectory()) return GO_MODE_DIR + perm;
  if (st.isSymbolicLink()) return GO_MODE_SYMLINK + perm;
  return perm;
}
function goModeString(mode: number): string {
  const type = mode >= GO_MODE_DIR ? 'd' : mode >= GO_MODE_SYMLINK ? 'L' : '-';
  const rwx = 'rwxrwxrwx';
  return type + [...rwx].map((c, i) => (mode & (1 << (8 - i)) ? c : '-')).join('');
}
const goModeOctal = (mode: number): string => `0${mode.toString(8)}`;
const goMode = (mode: number): string => `${goModeString(mode)}/${mode}/${goModeOctal(mode)}`;

/** 4.18 on_disk_validation.go:266-286 checkFileContentsAndMode */
function checkFileContentsAndMode(filePath: string, expected: Buffer, mode: number): void {
  let st;
  try {
    st = lstatSync(filePath);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file or directory' : errMessage(e);
    throw new Error(`could not stat file ${JSON.stringify(filePath)}: lstat ${filePath}: ${why}`);
  }
  const actual = goFileMode(st);
  if (actual !== mode)
    throw new Error(
      `mode mismatch for file: ${JSON.stringify(filePath)}; expected: ${goMode(mode)}; received: ${goMode(actual)}`,
    );
  const contents = readFileSync(filePath);
  if (!contents.equals(expected)) {
    // upstream logs sizes only, never contents (they may be secrets)
    log(
      `content mismatch for file ${JSON.stringify(filePath)} (expected ${expected.length} bytes, got ${contents.length} bytes)`,
    );
    throw new Error(`content mismatch for file ${JSON.stringify(filePath)}`);
  }
}

/** 4.18 on_disk_validation.go:174-181 getFilesToIgnore */
const FILES_TO_IGNORE = new Set([
  '/etc/kubernetes/kubelet-ca.crt',
  '/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem',
  // 4.18: internalRegistryAuthFile; 4.17: imageRegistryAuthFile (same path)
  '/etc/mco/internal-registry-pull-secret.json',
]);

/** 4.18 on_disk_validation.go:185-210 checkV3Files */
function checkV3Files(list: IgnFile[]): void {
  for (const f of list) {
    if (FILES_TO_IGNORE.has(f.path)) continue;
    checkFileContentsAndMode(f.path, decodeContents(f), f.mode ?? DEFAULT_FILE_PERMISSIONS);
  }
}

/** 4.18 on_disk_validation.go:240-264 checkUnitEnabled; absent from release-4.17 */
function checkUnitEnabled(name: string, expectedEnabled: boolean | undefined): void {
  if (expectedEnabled === undefined) return;
  const out = spawnSync('systemctl', ['is-enabled', name], { encoding: 'utf8' }).stdout.trim();
  if (expectedEnabled && ['disabled', 'masked', 'masked-runtime', 'not-found'].includes(out))
    throw new Error(`unit ${JSON.stringify(name)} expected enabled=true, but systemd reports ${JSON.stringify(out)}`);
  if (!expectedEnabled && ['enabled', 'enabled-runtime'].includes(out))
    throw new Error(`unit ${JSON.stringify(name)} expected enabled=false, but systemd reports ${JSON.stringify(out)}`);
}

/** 4.18 on_disk_validation.go:51-73 checkV3Dropin */
function checkV3Dropin(u: IgnUnit, d: IgnDropin): void {
  const path = dropinPath(u, d);
  const content = d.contents ?? '';
  // "As of 4.7 we now remove any empty defined dropins"
  if (content === '' && !existsSync(path)) return;
  checkFileContentsAndMode(path, Buffer.from(content), DEFAULT_FILE_PERMISSIONS);
}

/** 4.18 on_disk_validation.go:76-111 checkV3Unit (4.17: :75-104, without checkUnitEnabled) */
function checkV3Unit(u: IgnUnit): void {
  for (const d of u.dropins ?? []) checkV3Dropin(u, d);
  // "Return early if the contents are empty": a unit a config only enables or disables is not checked
  if (u.contents === undefined || u.contents === '') return;
  const path = unitPath(u);
  if (u.mask) {
    const st = lstatSync(path);
    const link = st.isSymbolicLink() ? readlinkTarget(path) : path;
    if (link !== PATH_DEV_NULL)
      throw new Error(
        `state validation: invalid unit masked setting. path: ${JSON.stringify(path)}; expected: ${PATH_DEV_NULL}; received: ${link}`,
      );
    return;
  }
  checkFileContentsAndMode(path, Buffer.from(u.contents), DEFAULT_FILE_PERMISSIONS);
  if (unitsByDiff) checkUnitEnabled(u.name, u.enabled);
}

function readlinkTarget(path: string): string {
  return execFileSync('readlink', ['-f', path], { encoding: 'utf8' }).trim();
}

/** 4.18 on_disk_validation.go:19-48 validateOnDiskState: files first, then units */
function validateOnDiskState(mc: RenderedConfig): void {
  const c = mc.spec.config;
  try {
    checkV3Files(files(c));
    for (const u of units(c)) checkV3Unit(u);
  } catch (e) {
    if (e instanceof NotModelledError) throw e;
    throw new ConfigDriftError(errMessage(e));
  }
}

/** 4.18 daemon.go:2583-2601 validateOnDiskStateOrImage (no image here) */
function validateOnDiskStateOrImage(mc: RenderedConfig): void {
  try {
    validateOnDiskState(mc);
  } catch (e) {
    if (e instanceof NotModelledError) throw e;
    throw new Error(`unexpected on-disk state validating against ${mc.metadata.name}: ${errMessage(e)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// the config drift monitor: 4.18 pkg/daemon/config_drift_monitor.go

class ConfigDriftMonitor {
  private watchers: FSWatcher[] = [];
  private chain: Promise<void> = Promise.resolve();

  get running(): boolean {
    return this.watchers.length > 0;
  }

  /**
   * :175-218 initialize, :311-340 getFilePathsFromIgn3Config: the declared files, units and
   * drop-ins that exist now; their folders are watched, events for any other path are ignored
   * (:278-289 checkMachineConfigForEvent). Each relevant event validates the whole config.
   */
  start(mc: RenderedConfig): void {
    const paths = new Set<string>();
    for (const f of files(mc.spec.config)) if (existsSync(f.path)) paths.add(f.path);
    for (const u of units(mc.spec.config)) {
      if (existsSync(unitPath(u))) paths.add(unitPath(u));
      for (const d of u.dropins ?? []) if (existsSync(dropinPath(u, d))) paths.add(dropinPath(u, d));
    }
    for (const dir of new Set([...paths].map((p) => dirname(p)))) {
      this.watchers.push(
        watch(dir, (_type, name) => {
          if (name === null || !paths.has(join(dir, name))) return;
          this.chain = this.chain.then(() => this.check(mc));
        }),
      );
    }
    log(`Config Drift Monitor started (${paths.size} files in ${this.watchers.length} folders)`);
  }

  private check(mc: RenderedConfig): void {
    if (!this.running) return;
    try {
      validateOnDiskState(mc);
    } catch (e) {
      if (e instanceof ConfigDriftError) onConfigDrift(e);
      else log(`unknown config drift error: ${errMessage(e)}`);
    }
  }

  stop(): void {
    for (const w of this.watchers) w.close();
    if (this.watchers.length) log('Config Drift Monitor has shut down');
    this.watchers = [];
  }
}
const driftMonitor = new ConfigDriftMonitor();

/** 4.18 daemon.go:1399-1406 onConfigDrift */
function onConfigDrift(err: Error): void {
  event('Warning', 'ConfigDriftDetected', err.message);
  log(err.message);
  updateErrorState(err);
}

/** 4.18 daemon.go:1452-1500 startConfigDriftMonitor: against the config on disk, if not running */
function startConfigDriftMonitor(): void {
  if (driftMonitor.running) return;
  const odc = getCurrentConfigOnDisk();
  const mc = odc ?? getConfig(readNode()[CURRENT_KEY]!);
  driftMonitor.start(mc);
}

// ---------------------------------------------------------------------------------------------
// writing files and units: 4.17/4.18 pkg/daemon/file_writers.go and update.go

/** file_writers.go:160-187 writeFileAtomically: folder 0755, mode set before the data, renamed */
function writeFileAtomically(path: string, data: Buffer, dirMode: number, mode: number, uid = -1, gid = -1): void {
  mkdirSync(dirname(path), { recursive: true, mode: dirMode });
  const tmp = join(dirname(path), `.${basename(path)}.mcd-${process.pid}`);
  writeFileSync(tmp, '', { mode });
  chmodSync(tmp, mode);
  writeFileSync(tmp, data);
  if (uid !== -1 && gid !== -1) chownSync(tmp, uid, gid);
  renameSync(tmp, path);
}

/** 4.18 daemon.go:1833-1844 storeCurrentConfigOnDisk: the MachineConfig as JSON, 0644 */
function storeCurrentConfigOnDisk(mc: RenderedConfig): void {
  writeFileAtomically(
    CURRENT_CONFIG_FILE,
    Buffer.from(JSON.stringify(mc)),
    DEFAULT_DIRECTORY_PERMISSIONS,
    DEFAULT_FILE_PERMISSIONS,
  );
}

/** file_writers.go:227-265 writeFiles (4.17 and 4.18 alike) */
function writeFiles(list: IgnFile[]): void {
  for (const f of list) {
    log(`Writing file ${JSON.stringify(f.path)}`);
    const mode = f.mode ?? DEFAULT_FILE_PERMISSIONS;
    // getFileOwnership (:365-387): root unless the file names its owner
    writeFileAtomically(
      f.path,
      decodeContents(f),
      DEFAULT_DIRECTORY_PERMISSIONS,
      mode,
      f.user?.id ?? 0,
      f.group?.id ?? 0,
    );
  }
}

/** file_writers.go:190-224 writeDropins: an empty drop-in is removed */
function writeDropins(u: IgnUnit): void {
  for (const d of u.dropins ?? []) {
    const path = dropinPath(u, d);
    if (!d.contents) {
      if (existsSync(path)) unlinkSync(path);
      continue;
    }
    log(`Writing systemd unit dropin ${JSON.stringify(d.name)}`);
    writeFileAtomically(path, Buffer.from(d.contents), DEFAULT_DIRECTORY_PERMISSIONS, DEFAULT_FILE_PERMISSIONS);
  }
}

function systemctl(args: string[]): void {
  const r = spawnSync('systemctl', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`systemctl ${args.join(' ')}: ${r.stdout}${r.stderr}`);
}

/**
 * file_writers.go:268-331 writeUnit (4.17 and 4.18 alike): drop-ins; a mask is a /dev/null link;
 * a unit with contents that is enabled now is disabled before it is rewritten (OCPBUGS-33694),
 * and writeUnits enables it again if its config says so.
 */
function writeUnit(u: IgnUnit): void {
  writeDropins(u);
  const path = unitPath(u);
  if (u.mask) {
    rmSync(path, { recursive: true, force: true });
    symlinkSync(PATH_DEV_NULL, path);
    return;
  }
  if (u.contents) {
    log(`Writing systemd unit ${JSON.stringify(u.name)}`);
    const r = spawnSync('systemctl', ['is-enabled', u.name], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim() === 'enabled') {
      log(`Disabling systemd unit ${u.name} before re-writing it`);
      systemctl(['disable', u.name]);
    }
    writeFileAtomically(path, Buffer.from(u.contents), DEFAULT_DIRECTORY_PERMISSIONS, DEFAULT_FILE_PERMISSIONS);
  } else if (u.mask === false) {
    rmSync(path, { recursive: true, force: true });
  }
}

/**
 * 4.17 update.go:2211-2260, 4.18 update.go:2457-2506 writeUnits: every unit given is written; then
 * one `systemctl enable` for the units declared enabled and one `systemctl disable` for those
 * declared disabled; a unit that says neither is preset.
 */
function writeUnits(list: IgnUnit[]): void {
  const enabled: string[] = [];
  const disabled: string[] = [];
  for (const u of list) {
    writeUnit(u);
    if (u.enabled === true) enabled.push(u.name);
    else if (u.enabled === false) disabled.push(u.name);
    else if (spawnSync('systemctl', ['preset', u.name]).status !== 0)
      log(`Could not reset unit preset for ${u.name}, skipping.`);
  }
  if (enabled.length) {
    systemctl(['enable', ...enabled]);
    log(`Enabled systemd units: [${enabled.join(' ')}]`);
  }
  if (disabled.length) {
    systemctl(['disable', ...disabled]);
    log(`Disabled systemd units [${disabled.join(' ')}]`);
  }
}

/** 4.18 update.go:2196 deleteStaleData: not modelled (see the header) */
function refuseStaleData(oldC: IgnConfig, newC: IgnConfig): void {
  const newFiles = new Set(files(newC).map((f) => f.path));
  const newUnits = new Set(units(newC).map((u) => u.name));
  const stale = [
    ...files(oldC)
      .filter((f) => !newFiles.has(f.path))
      .map((f) => f.path),
    ...units(oldC)
      .filter((u) => !newUnits.has(u.name))
      .map((u) => u.name),
  ];
  if (stale.length) throw new NotModelledError(`an update that removes ${stale.join(', ')}`);
}

/**
 * 4.17 update.go:1887-1896 updateFiles: all files, then ALL units of the new config.
 * 4.18 update.go:2119-2141 updateFiles: all files, then only the units added or changed since
 * the old config (OCPBUGS-58023), or all units when the force file was there (OCPBUGS-74692).
 */
function updateFiles(oldC: IgnConfig, newC: IgnConfig, unitsToWrite: IgnUnit[]): void {
  log('Updating files');
  writeFiles(files(newC));
  writeUnits(unitsToWrite);
  refuseStaleData(oldC, newC);
}

// ---------------------------------------------------------------------------------------------
// the passwd section: SSH keys of core (4.14-4.18 alike, see the header)

const CORE = 'core';
const CORE_SSH_PATH = `/home/${CORE}/.ssh`; // constants.go:108-109 CoreUserSSHPath
const RHCOS8_SSH_KEY_PATH = `${CORE_SSH_PATH}/authorized_keys`; // constants.go:111-112
const RHCOS9_SSH_KEY_PATH = `${CORE_SSH_PATH}/authorized_keys.d/ignition`; // constants.go:114-115

const users = (c: IgnConfig): IgnUser[] => c.passwd?.users ?? [];

/** 4.18 pkg/controller/common/reconcile.go:141-187 validatePasswdChanges and verifyUserFields */
function validatePasswdChanges(oldC: IgnConfig, newC: IgnConfig): void {
  if (isDeepStrictEqual(users(oldC), users(newC))) return;
  if (users(newC).some((u) => u.name !== CORE))
    throw new Error('ignition passwd user section contains unsupported changes: non-core user');
  const last = users(newC).at(-1);
  if (last === undefined) return;
  if (last.passwordHash !== undefined) throw new NotModelledError('a password hash for core');
  const { name: _n, sshAuthorizedKeys, ...rest } = last;
  if (!sshAuthorizedKeys?.length)
    throw new Error(
      'ignition passwd user section contains unsupported changes: user must be core and have 1 or more sshKeys',
    );
  if (Object.keys(rest).length > 0) throw new Error('SSH keys and password hash are not reconcilable');
}

/** 4.18 update.go:1690-1708 reconcilable, the passwd part (IsRenderedConfigReconcilable) */
function reconcilable(oldConfig: RenderedConfig, newConfig: RenderedConfig): void {
  try {
    validatePasswdChanges(oldConfig.spec.config, newConfig.spec.config);
  } catch (e) {
    if (e instanceof NotModelledError) throw e;
    const why = `configs ${oldConfig.metadata.name}, ${newConfig.metadata.name} are not reconcilable: ${errMessage(e)}`;
    const wrapped = `can't reconcile config ${oldConfig.metadata.name} with ${newConfig.metadata.name}: ${why}`;
    event('Warning', 'FailedToReconcile', wrapped);
    throw new UnreconcilableError(wrapped);
  }
}

/** 4.18 update.go:2773-2789 cleanSSHKeyPaths: the RHCOS 8 file goes, whatever it holds */
function cleanSSHKeyPaths(): void {
  if (existsSync(RHCOS8_SSH_KEY_PATH)) rmSync(RHCOS8_SSH_KEY_PATH, { recursive: true, force: true });
}

/** 4.18 update.go:2791-2815 removeNonIgnitionKeyPathFragments: every other entry of authorized_keys.d goes */
function removeNonIgnitionKeyPathFragments(): void {
  const dir = dirname(RHCOS9_SSH_KEY_PATH);
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir))
    if (name !== basename(RHCOS9_SSH_KEY_PATH)) rmSync(join(dir, name), { recursive: true, force: true });
}

/**
 * 4.18 update.go:2515-2588 createSSHKeyDir and atomicallyWriteSSHKey: a ~/.ssh owned by another
 * user than core is removed whole (OCPBUGS-11832); missing folders are made by core, 0700; the
 * keys file is written atomically, 0600, core's.
 */
function atomicallyWriteSSHKey(authKeyPath: string, keys: string): void {
  // lookupUID / lookupGID of core
  const uid = Number(execFileSync('id', ['-u', CORE], { encoding: 'utf8' }));
  const gid = Number(execFileSync('id', ['-g', CORE], { encoding: 'utf8' }));
  log(`Writing SSH keys to ${JSON.stringify(authKeyPath)}`);
  if (existsSync(CORE_SSH_PATH) && statSync(CORE_SSH_PATH).uid !== uid) rmSync(CORE_SSH_PATH, { recursive: true });
  if (!existsSync(dirname(authKeyPath))) {
    log(`Creating missing SSH key dir at ${JSON.stringify(dirname(authKeyPath))}`);
    execFileSync('runuser', ['-u', CORE, '--', 'mkdir', '-m', '0700', '-p', dirname(authKeyPath)]);
  }
  writeFileAtomically(authKeyPath, Buffer.from(keys), 0o700, 0o600, uid, gid);
}

/**
 * 4.18 update.go:2672-2723 updateSSHKeys, on RHCOS 9: every key of the new users, one a line;
 * /home/core/.ssh/authorized_keys removed, every fragment but `ignition` removed, the keys
 * written to authorized_keys.d/ignition.
 */
function updateSSHKeys(newUsers: IgnUser[]): void {
  log('updating SSH keys');
  const keys = newUsers.flatMap((u) => (u.sshAuthorizedKeys ?? []).map((k) => `${k}\n`)).join('');
  cleanSSHKeyPaths();
  removeNonIgnitionKeyPathFragments();
  atomicallyWriteSSHKey(RHCOS9_SSH_KEY_PATH, keys);
}

// ---------------------------------------------------------------------------------------------
// config diffs and post-config actions

/** 4.18 helpers.go:1045-1075 CalculateConfigFileDiffs: paths added, removed or changed in any field */
function calculateConfigFileDiffs(oldC: IgnConfig, newC: IgnConfig): string[] {
  const oldSet = new Map(files(oldC).map((f) => [f.path, f]));
  const newSet = new Map(files(newC).map((f) => [f.path, f]));
  const diff = [...oldSet.keys()].filter((p) => !newSet.has(p));
  for (const [p, f] of newSet) if (!oldSet.has(p) || !isDeepStrictEqual(oldSet.get(p), f)) diff.push(p);
  return diff;
}

/**
 * 4.18 helpers.go:1088-1121 GetChangedConfigUnitsByType (4.17: helpers.go:1059-1086
 * CalculateConfigUnitDiffs, the same sets as names)
 */
function changedUnits(oldC: IgnConfig, newC: IgnConfig): { added: IgnUnit[]; removed: IgnUnit[]; updated: IgnUnit[] } {
  const oldSet = new Map(units(oldC).map((u) => [u.name, u]));
  const newSet = new Map(units(newC).map((u) => [u.name, u]));
  return {
    removed: [...oldSet.values()].filter((u) => !newSet.has(u.name)),
    added: [...newSet.values()].filter((u) => !oldSet.has(u.name)),
    updated: [...newSet.values()].filter((u) => oldSet.has(u.name) && !isDeepStrictEqual(oldSet.get(u.name), u)),
  };
}

type Action = 'None' | 'Reboot';

/**
 * 4.18 pkg/apihelpers/apihelpers.go:24-118 defaultClusterPolicies, the file entries: the pull
 * secret and /etc/nmstate/openshift need nothing; the CRI-O and CA entries need a reload/restart
 * this model does not do.
 */
const DEFAULT_FILE_POLICIES: { path: string; action: Action | 'not modelled' }[] = [
  { path: '/var/lib/kubelet/config.json', action: 'None' },
  { path: '/etc/machine-config-daemon/no-reboot/containers-gpg.pub', action: 'not modelled' },
  { path: '/etc/containers/policy.json', action: 'not modelled' },
  { path: '/etc/containers/registries.conf', action: 'not modelled' },
  { path: '/etc/containers/registries.d', action: 'not modelled' },
  { path: '/etc/crio/policies', action: 'not modelled' },
  { path: '/etc/nmstate/openshift', action: 'None' },
  { path: '/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt', action: 'not modelled' },
];

/** 4.18 helpers.go:1301-1321 FindClosestFilePolicyPathMatch: the exact path or the longest parent folder */
function closestFilePolicy(path: string): Action | 'not modelled' | undefined {
  let best: (typeof DEFAULT_FILE_POLICIES)[number] | undefined;
  for (const p of DEFAULT_FILE_POLICIES)
    if ((path === p.path || path.startsWith(`${p.path}/`)) && p.path.length > (best?.path.length ?? 0)) best = p;
  return best?.action;
}

/**
 * 4.18 update.go:735-776 calculatePostConfigChangeNodeDisruptionAction (4.17: :725-766): the force
 * file means a reboot whatever changed, and is removed; otherwise :640-711
 * calculatePostConfigChangeNodeDisruptionActionFromMCDiffs with the default policies: a file
 * without a policy, or any changed unit (the defaults name no unit), means a reboot.
 */
function calculatePostConfigChangeAction(diffFileSet: string[], diffUnitSet: string[]): Action {
  if (forceFileExists()) {
    rmSync(FORCE_FILE);
    log(`Setting post config change node disruption action to Reboot; ${FORCE_FILE} present`);
    return 'Reboot';
  }
  const actions: Action[] = [];
  for (const path of diffFileSet) {
    const found = closestFilePolicy(path);
    if (found === undefined) return 'Reboot';
    if (found === 'not modelled') throw new NotModelledError(`the post-config action for ${path}`);
    actions.push(found);
  }
  if (diffUnitSet.length > 0) return 'Reboot';
  return actions.includes('Reboot') ? 'Reboot' : 'None';
}

// ---------------------------------------------------------------------------------------------
// the update and the sync loop: 4.17/4.18 pkg/daemon/update.go and daemon.go

let rebooting = false;

/** 4.18 daemon.go:264-273 rebootCommand, update.go:3076-3117 reboot */
function reboot(rationale: string): void {
  event('Normal', 'Reboot', rationale);
  log(`initiating reboot: ${rationale}`);
  rebooting = true;
  driftMonitor.stop();
  execFileSync('systemd-run', [
    '--unit',
    'machine-config-daemon-reboot',
    '--description',
    `machine-config-daemon: ${rationale}`,
    '/bin/sh',
    '-c',
    'systemctl reboot',
  ]);
}

/**
 * 4.18 daemon.go:2176-2260 updateConfigAndState + completeUpdate: the node in its desired config
 * is marked Done with the config on disk as current.
 */
function completeUpdate(): boolean {
  const odc = getCurrentConfigOnDisk();
  const node = readNode();
  const current = odc?.metadata.name ?? node[CURRENT_KEY]!;
  if (current !== node[DESIRED_KEY]) return false;
  log(`Completing update to target ${current}`);
  setAnnotations({ [CURRENT_KEY]: current, [STATE_KEY]: 'Done', [REASON_KEY]: '' });
  return true;
}

/** 4.18 update.go:93-118 finishRebootlessUpdate */
function finishRebootlessUpdate(): void {
  if (completeUpdate()) {
    startConfigDriftMonitor();
    return;
  }
  const node = readNode();
  triggerUpdate(getConfig(node[CURRENT_KEY]!), getConfig(node[DESIRED_KEY]!));
}

/**
 * 4.17 update.go:1079-1391, 4.18 update.go:1161-1485 update: Working (unless already Degraded),
 * reconcilable, the diffs, the post-config action, the files and units, the SSH keys when the
 * passwd section changed (:1386-1400), the current config on disk, then the action. A failure puts
 * the old files, units and keys back (the deferred updateFiles(new, old) and updateSSHKeys(old)).
 * An SSH change alone needs no reboot: the default policy for SSH keys is None (apihelpers.go:112-118,
 * update.go:680-683).
 */
function update(oldConfig: RenderedConfig, newConfig: RenderedConfig): void {
  const state = readNode()[STATE_KEY];
  if (state !== 'Degraded' && state !== 'Unreconcilable') setAnnotations({ [STATE_KEY]: 'Working' });
  const oldC = oldConfig.spec.config;
  const newC = newConfig.spec.config;
  reconcilable(oldConfig, newConfig);
  const diffPasswd = !isDeepStrictEqual(oldC.passwd ?? {}, newC.passwd ?? {});
  log(`Starting update from ${oldConfig.metadata.name} to ${newConfig.metadata.name}`);
  const diffFileSet = calculateConfigFileDiffs(oldC, newC);
  const unitDiff = changedUnits(oldC, newC);
  const addedOrChanged = [...unitDiff.added, ...unitDiff.updated];
  const diffUnitSet = [...addedOrChanged, ...unitDiff.removed].map((u) => u.name);
  // 4.18 update.go:1245-1247: read before the action calculation removes the file
  const forceFilePresent = forceFileExists();
  const action = calculatePostConfigChangeAction(diffFileSet, diffUnitSet);
  const unitsToWrite = !unitsByDiff || forceFilePresent ? units(newC) : addedOrChanged;
  if (unitsByDiff && forceFilePresent) log('Forcefile exists, writing all units');
  try {
    updateFiles(oldC, newC, unitsToWrite);
    if (diffPasswd) updateSSHKeys(users(newC));
    storeCurrentConfigOnDisk(newConfig);
  } catch (e) {
    // the rollback writes the old config's units the way this release writes them
    const back = changedUnits(newC, oldC);
    updateFiles(newC, oldC, unitsByDiff ? [...back.added, ...back.updated] : units(oldC));
    if (diffPasswd) updateSSHKeys(users(oldC));
    storeCurrentConfigOnDisk(oldConfig);
    throw e;
  }
  if (action === 'Reboot') {
    reboot(`Node will reboot into config ${newConfig.metadata.name}`);
    return;
  }
  event('Normal', 'SkipReboot', 'Config changes do not require reboot.');
  log(`Node has Desired Config ${newConfig.metadata.name}, skipping reboot`);
  finishRebootlessUpdate();
}

/** 4.18 daemon.go:2481-2510 triggerUpdateWithMachineConfig: the drift monitor stops for the update */
function triggerUpdate(current: RenderedConfig, desired: RenderedConfig): void {
  driftMonitor.stop();
  update(current, desired);
}

/** 4.18 daemon.go:863-892 runPreflightConfigDriftCheck */
function runPreflightConfigDriftCheck(): void {
  if (forceFileExists()) {
    log(`Skipping preflight config drift check; ${FORCE_FILE} present`);
    return;
  }
  const current = getCurrentConfigOnDisk() ?? getConfig(readNode()[CURRENT_KEY]!);
  try {
    validateOnDiskStateOrImage(current);
  } catch (e) {
    if (e instanceof NotModelledError) throw e;
    event('Warning', 'PreflightConfigDriftCheckFailed', errMessage(e));
    log(`Preflight config drift check failed: ${errMessage(e)}`);
    throw new ConfigDriftError(errMessage(e));
  }
  log('Preflight config drift check successful');
}

/** 4.18 daemon.go:2343-2420 prepUpdateFromCluster */
function prepUpdateFromCluster(): { current: RenderedConfig; desired: RenderedConfig } | undefined {
  const node = readNode();
  const desired = getConfig(node[DESIRED_KEY]!);
  const current = getConfig(node[CURRENT_KEY]!);
  const odc = getCurrentConfigOnDisk();
  if (odc && odc.metadata.name !== current.metadata.name) return { current: odc, desired };
  if (node[DESIRED_KEY] === node[CURRENT_KEY]) {
    if (node[STATE_KEY] === 'Done') return undefined;
    log(`current+desiredConfig is ${node[CURRENT_KEY]} but state is ${node[STATE_KEY]}`);
  }
  return { current: odc ?? current, desired };
}

/**
 * 4.18 daemon.go:2048-2174 checkStateOnFirstRun: the config on disk wins over the annotation; the
 * force file skips the validation and triggers the update; otherwise the on-disk state must match
 * the current config, or the start fails (OnDiskStateValidationFailed) and the node goes Degraded.
 */
function checkStateOnFirstRun(): void {
  const node = readNode();
  let current = getConfig(node[CURRENT_KEY]!);
  const desired = getConfig(node[DESIRED_KEY]!);
  const odc = getCurrentConfigOnDisk();
  if (odc && odc.metadata.name !== current.metadata.name) {
    log(`Disk currentConfig ${odc.metadata.name} overrides node's currentConfig annotation ${current.metadata.name}`);
    current = odc;
  }
  log(`Validating against current config ${current.metadata.name}`);
  if (forceFileExists()) {
    log(`Skipping on-disk validation; ${FORCE_FILE} present`);
    triggerUpdate(current, desired);
    return;
  }
  try {
    validateOnDiskStateOrImage(current);
  } catch (e) {
    if (e instanceof NotModelledError) throw e;
    event('Warning', 'OnDiskStateValidationFailed', errMessage(e));
    startConfigDriftMonitor();
    throw e;
  }
  log('Validated on-disk state');
  if (completeUpdate()) return;
  event(
    'Normal',
    'BootResync',
    `Booting node, currentConfig ${current.metadata.name}, desiredConfig ${desired.metadata.name}`,
  );
  triggerUpdate(current, desired);
}

let booting = true;

/** 4.18 daemon.go:667-860 syncNode, the parts for a node whose config is a MachineConfig */
function syncNode(): void {
  if (booting) {
    checkStateOnFirstRun();
    booting = false;
    if (!rebooting) startConfigDriftMonitor();
    return;
  }
  const ufc = prepUpdateFromCluster();
  if (!ufc) return;
  runPreflightConfigDriftCheck();
  triggerUpdate(ufc.current, ufc.desired);
}

/*
 * The work queue, one sync at a time (4.18 daemon.go:579-615 worker, processNextWorkItem, handleErr;
 * :374-377 the rate limiter). MaxOf(Bucket(rate.Limit(updateDelay)), ItemExponential(1 s,
 * maxUpdateBackoff = 60 s), :195-199): rate.Limit(updateDelay) reads 5 s as 5e9 events a second, so
 * the bucket never waits and the delay is the per-item one, 1 s doubling to 60 s. It grows on every
 * AddRateLimited, a node update's (:897-904 enqueueDefault) and a failed sync's alike, and is reset
 * (Forget) by a sync without error. So a node left Degraded keeps re-running the sync every 60 s at
 * most, and recovers by itself once the drift is gone. A key already waiting keeps the earlier time.
 */
let queued = false;
let running = false;
let requeues = 0;
let dueAt: number | undefined;
let dueTimer: NodeJS.Timeout | undefined;

/** workqueue ItemExponentialFailureRateLimiter.When + DelayingQueue.AddAfter */
function addRateLimited(): void {
  const delayMs = Math.min(1000 * 2 ** requeues, 60_000);
  requeues++;
  const at = Date.now() + delayMs;
  if (dueAt !== undefined && dueAt <= at) return;
  clearTimeout(dueTimer);
  dueAt = at;
  dueTimer = setTimeout(() => {
    dueAt = undefined;
    add();
  }, delayMs);
}

/** queue.Add: processed now, or once more after the sync running now */
function add(): void {
  queued = true;
  if (running || rebooting) return;
  running = true;
  setImmediate(() => {
    while (queued && !rebooting) {
      queued = false;
      try {
        syncNode();
        requeues = 0;
      } catch (e) {
        if (e instanceof NotModelledError) {
          log(`model: not modelled: ${e.message}`);
          process.exit(70);
        }
        updateErrorState(e);
        log(`Error syncing node (retries ${requeues}): ${errMessage(e)}`);
        addRateLimited();
      }
    }
    running = false;
  });
}

mkdirSync(MODEL_DIR, { recursive: true, mode: 0o700 });
log(`machine-config daemon model (${release}) starting`);
// the controller's side: a rendered config dropped by the test becomes the node's desiredConfig
watch(MODEL_DIR, (_type, name) => {
  if (name === basename(DESIRED_FILE)) observeDesired();
});
observeDesired();
// the informer's first list: an Add event for the node
addRateLimited();
