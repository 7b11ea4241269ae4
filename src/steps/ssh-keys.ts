/**
 * [ssh-keys] The site's SSH keys for the core user, first of all the steps, so that a node whose
 * network change goes wrong can still be reached and debugged.
 *
 * Where they go, and why there. On RHCOS 9 the machine-config daemon owns core's keys: whenever a
 * MachineConfig changes the passwd section (an admin editing 99-master-ssh, say), updateSSHKeys
 * deletes ~/.ssh/authorized_keys and every file of ~/.ssh/authorized_keys.d but `ignition`, then
 * writes `ignition` with the MachineConfigs' keys (machine-config-operator pkg/daemon/update.go,
 * release-4.14 to 4.18 alike: 4.18 :2672-2723, 2773-2815). sshd reads that folder through
 * ssh-key-dir (coreos/ssh-key-dir conf/40-ssh-key-dir.conf: AuthorizedKeysCommand
 * /usr/libexec/ssh-key-dir %u) and ~/.ssh/authorized_keys through AuthorizedKeysFile; nothing
 * the agent keeps in core's .ssh outlives that change. So the keys live in a file of the agent's,
 * /etc/sno-relocate/ssh/core.authorized_keys (root's, 0644 in 0755 folders, as sshd's StrictModes
 * wants for a file it opens as core), and a drop-in of its own names it to sshd beside
 * .ssh/authorized_keys. The drop-in sorts first (30-) because sshd takes the first value it reads
 * for a keyword (sshd_config(5)), and RHEL's sshd_config includes sshd_config.d/*.conf at its top,
 * before its own `AuthorizedKeysFile .ssh/authorized_keys`. The daemon declares nothing under
 * /etc/ssh or /etc/sno-relocate, so neither file is drift.
 *
 * sshd reads its configuration when it starts (each connection gets the listener's copy), so a
 * changed drop-in restarts it through systemd's D-Bus API; when it does not come back, the previous
 * drop-in is put back and it is restarted with that (restart-with-files.ts). The keys file itself
 * is read at every login: no restart.
 *
 * An earlier layout kept the site's keys in a marked block of ~/.ssh/authorized_keys: that block is
 * taken out, the file's other lines kept. core controls its home, so nothing there is followed: a
 * link, FIFO or foreign file in place of ~/.ssh/authorized_keys is refused (exit 3), naming it.
 */
import path from 'node:path';
import { ConfigError } from '../base/errors.js';
import type { Change, PlanResult } from '../engine/step.js';
import type { Step } from './step.js';
import {
  describeKey,
  parseKeyLine,
  type PasswdEntry,
  passwdEntry,
  renderAuthorizedKeys,
  splitManagedBlock,
} from '../node/authorized-keys.js';
import {
  fileChange,
  type HostFile,
  lineDiff,
  type ManagedFile,
  readHostFile,
  readHostFiles,
  writeManagedFile,
} from '../node/managed-file.js';
import { restartPending, restartWithFiles, type ServiceFiles } from '../node/restart-with-files.js';
import type { FolderOwner } from '../ports/fs.js';

const USER = 'core';
const DEFAULT_HOME = `/home/${USER}`;
export const SSHD_UNIT = 'sshd.service';
export const KEYS_FILE = `/etc/sno-relocate/ssh/${USER}.authorized_keys`;
export const SSHD_DROP_IN = '/etc/ssh/sshd_config.d/30-sno-relocate-authorized-keys.conf';
const HEADER = '# Installed by sno-relocate from the site-config (spec.sshAuthorizedKeys); rewritten on every run.';

const DROP_IN_TEXT = `${HEADER}
# The site's keys for core live outside ~/.ssh, which the machine-config daemon empties whenever a
# MachineConfig changes the SSH keys; sshd reads them beside core's own authorized_keys.
AuthorizedKeysFile .ssh/authorized_keys /etc/sno-relocate/ssh/%u.authorized_keys
`;

const SSHD: ServiceFiles = {
  step: 'ssh-keys',
  unit: SSHD_UNIT,
  marker: 'sshd-restart-pending',
  paths: [SSHD_DROP_IN],
  describe: "the drop-in naming the site's keys file",
};

/** What the step reads of the host: core's account, the agent's two files, core's authorized_keys. */
export interface SshKeysView {
  user?: PasswdEntry;
  /** the keys file and the sshd drop-in, by path (absent: not there) */
  files: Record<string, HostFile>;
  /** ~/.ssh/authorized_keys, where an earlier layout kept the site's keys in a marked block */
  authorizedKeys?: HostFile;
  restartPending: boolean;
}

function checkKeys(keys: readonly string[]): void {
  keys.forEach((key, i) => {
    // the config rules refuse these already; a newline here would smuggle in a line of its own
    if (/[\r\n]/.test(key) || !parseKeyLine(key))
      throw new ConfigError('invalid site-config', [
        { severity: 'error', path: `$.spec.sshAuthorizedKeys[${i}]`, message: 'not an OpenSSH public key line' },
      ]);
  });
}

/** core's authorized_keys, and who owns it: without a core account the folder stays root's. */
function authorizedKeysOf(user: PasswdEntry | undefined): { owner: FolderOwner; filePath: string } {
  return {
    owner: { name: USER, uid: user?.uid ?? 0, gid: user?.gid ?? 0 },
    filePath: path.posix.join(user?.home ?? DEFAULT_HOME, '.ssh', 'authorized_keys'),
  };
}

/** The agent's files for these keys: none without keys. Root's and world-readable: sshd opens the keys as core. */
function wanted(keys: readonly string[]): ManagedFile[] {
  checkKeys(keys);
  if (keys.length === 0) return [];
  const lines = [...new Set(keys.map((k) => k.trim()))];
  return [
    { path: KEYS_FILE, content: `${HEADER}\n${lines.join('\n')}\n`, mode: 0o644, uid: 0, gid: 0 },
    { path: SSHD_DROP_IN, content: DROP_IN_TEXT, mode: 0o644, uid: 0, gid: 0 },
  ];
}

/** A file in a folder its user controls. */
type OwnedFile = ManagedFile & { userFolder: FolderOwner };

/** core's authorized_keys without the earlier layout's block; undefined when it has none. */
function withoutOldBlock(view: SshKeysView): OwnedFile | undefined {
  const have = view.authorizedKeys;
  if (!have || splitManagedBlock(have.content).managed.length === 0) return undefined;
  const { owner, filePath } = authorizedKeysOf(view.user);
  return {
    path: filePath,
    content: renderAuthorizedKeys(have.content, []),
    mode: have.mode,
    userFolder: owner,
    ...(view.user && { uid: view.user.uid, gid: view.user.gid }),
  };
}

/** The key lines that come and go, as type, fingerprint and comment. */
function keyDiff(before: string, after: string): string[] {
  return lineDiff(before, after).flatMap((line) => {
    const key = parseKeyLine(line.slice(2));
    return key ? [`${line.slice(0, 2)}${describeKey(key)}`] : [];
  });
}

/**
 * What apply does, in this order: write the keys file (`keysFile`); restart sshd with its drop-in
 * as `restartSshd` holds it (none: removed); remove `remove`; write core's authorized_keys without
 * an earlier layout's block (`authorizedKeys`, its folder made as core's first). `keys`: how many,
 * for the journal.
 */
export interface SshKeysDecision {
  keysFile?: ManagedFile;
  restartSshd?: { files: ManagedFile[] };
  remove: string[];
  authorizedKeys?: OwnedFile;
  keys: number;
}

function decide(
  view: SshKeysView,
  files: ManagedFile[],
  keys: number,
): { changes: Change[]; decision: SshKeysDecision } {
  const out: Change[] = [];
  const decision: SshKeysDecision = { remove: [], keys };
  const keysFile = files.find((f) => f.path === KEYS_FILE);
  const keysChange = keysFile && fileChange(view.files[KEYS_FILE], keysFile, `${keys} site key(s) for ${USER}`);
  if (keysChange) {
    out.push({ ...keysChange, diff: keyDiff(view.files[KEYS_FILE]?.content ?? '', keysFile.content) });
    decision.keysFile = keysFile;
  }
  const dropIn = files.find((f) => f.path === SSHD_DROP_IN);
  const dropInChange = dropIn && fileChange(view.files[SSHD_DROP_IN], dropIn, 'sshd reads the keys file');
  if (dropInChange) out.push(dropInChange);
  if (files.length === 0)
    for (const target of [KEYS_FILE, SSHD_DROP_IN])
      if (view.files[target]?.content.startsWith(HEADER)) {
        out.push({ action: 'delete', target, summary: "an earlier site's SSH keys" });
        // the drop-in goes with sshd's restart, which puts back the one it had should sshd fail
        if (target === KEYS_FILE) decision.remove.push(target);
      }
  const old = withoutOldBlock(view);
  if (old) {
    out.push({
      action: 'update',
      target: old.path,
      summary: `the site's keys of an earlier layout moved out (to ${KEYS_FILE}); other lines kept`,
      diff: keyDiff(view.authorizedKeys!.content, old.content),
    });
    decision.authorizedKeys = old;
  }
  const sshdFiles = out.some((c) => c.target === SSHD_DROP_IN);
  if (sshdFiles || view.restartPending) {
    out.push({
      action: 'start',
      target: SSHD_UNIT,
      summary: sshdFiles
        ? 'restart over D-Bus, so that it reads the changed drop-in'
        : 'restart: a previous run changed its drop-in but did not restart it',
    });
    decision.restartSshd = { files: dropIn ? [dropIn] : [] };
  }
  return { changes: out, decision };
}

export const sshKeysStep: Step<SshKeysView, SshKeysDecision> = {
  name: 'ssh-keys',
  group: 'node',
  description:
    "the site's keys for `core` in a file sshd reads and the machine-config daemon leaves alone (first, so a broken network can still be debugged)",
  inputs: (site) => site.sshAuthorizedKeys,

  async survey(ctx) {
    const user = passwdEntry((await ctx.fs.readText('/etc/passwd')) ?? '', USER);
    const { owner, filePath } = authorizedKeysOf(user);
    const authorizedKeys = await readHostFile(ctx.fs, filePath, owner);
    return {
      ...(user && { user }),
      files: await readHostFiles(ctx.fs, [KEYS_FILE, SSHD_DROP_IN]),
      ...(authorizedKeys && { authorizedKeys }),
      restartPending: await restartPending(ctx, SSHD),
    };
  },

  plan(view, site): PlanResult<SshKeysDecision> {
    const keys = site.sshAuthorizedKeys.length;
    const { changes, decision } = decide(view, wanted(site.sshAuthorizedKeys), keys);
    if (changes.length === 0)
      return {
        action: 'noop',
        reason: keys === 0 ? 'the site-config has no SSH keys' : `${keys} site key(s) already authorized for ${USER}`,
      };
    return { action: 'change', summary: `authorize ${keys} site key(s) for ${USER}`, changes, decision };
  },

  async apply(ctx, decision) {
    // the keys first: once sshd reads the drop-in, the file it names is there
    if (decision.keysFile) await writeManagedFile(ctx.fs, decision.keysFile);
    if (decision.restartSshd) await restartWithFiles(ctx, SSHD, decision.restartSshd.files);
    for (const file of decision.remove) await ctx.fs.remove(file);
    const old = decision.authorizedKeys;
    if (old) {
      await ctx.fs.ensureUserDir(path.posix.dirname(old.path), 0o700, old.userFolder);
      await writeManagedFile(ctx.fs, old);
    }
    ctx.log.info({ file: KEYS_FILE, keys: decision.keys }, `${USER}'s site keys written where sshd reads them`);
  },
};
