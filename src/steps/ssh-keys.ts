/**
 * [ssh-keys] The site's SSH keys for the core user, first of all the steps, so that a node whose
 * network change goes wrong can still be reached and debugged. Lines of authorized_keys the agent
 * did not write stay as they are. core controls its home, so nothing there is followed: a link, FIFO
 * or foreign file in place of ~/.ssh or authorized_keys is refused (exit 3), naming the path.
 */
import path from 'node:path';
import { ConfigError } from '../base/errors.js';
import type { Change } from '../engine/step.js';
import type { Step } from '../config/site.js';
import {
  describeKey,
  parseKeyLine,
  type PasswdEntry,
  passwdEntry,
  renderAuthorizedKeys,
} from '../node/authorized-keys.js';
import {
  fileDrift,
  type HostFile,
  lineDiff,
  type ManagedFile,
  readHostFile,
  writeManagedFile,
} from '../node/managed-file.js';
import type { FolderOwner } from '../ports/fs.js';

const USER = 'core';
const DEFAULT_HOME = `/home/${USER}`;

interface Target {
  owner: FolderOwner;
  sshDir: string;
  file: ManagedFile;
}

/** What the step reads of the host: core's account, its .ssh folder's mode and its authorized_keys. */
export interface SshKeysView {
  user?: PasswdEntry;
  /** mode of ~/.ssh; undefined when it does not exist */
  dirMode?: number;
  authorizedKeys?: HostFile;
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

/** Where core's keys live, and who owns them: without a core account the folder stays root's. */
function where(user: PasswdEntry | undefined): { owner: FolderOwner; sshDir: string; filePath: string } {
  const sshDir = path.posix.join(user?.home ?? DEFAULT_HOME, '.ssh');
  return {
    owner: { name: USER, uid: user?.uid ?? 0, gid: user?.gid ?? 0 },
    sshDir,
    filePath: path.posix.join(sshDir, 'authorized_keys'),
  };
}

function target(view: SshKeysView, keys: readonly string[]): Target {
  checkKeys(keys);
  const { owner, sshDir, filePath } = where(view.user);
  return {
    owner,
    sshDir,
    file: {
      path: filePath,
      content: renderAuthorizedKeys(view.authorizedKeys?.content ?? '', keys),
      mode: 0o600,
      userFolder: owner,
      ...(view.user && { uid: view.user.uid, gid: view.user.gid }),
    },
  };
}

/** The key lines that come and go, as type, fingerprint and comment. */
function keyDiff(before: string, after: string): string[] {
  return lineDiff(before, after).flatMap((line) => {
    const key = parseKeyLine(line.slice(2));
    return key ? [`${line.slice(0, 2)}${describeKey(key)}`] : [];
  });
}

export const sshKeysStep: Step<SshKeysView> = {
  name: 'ssh-keys',
  group: 'node',
  description: "the site's keys into `core`'s `authorized_keys` (first, so a broken network can still be debugged)",
  inputs: (site) => site.sshAuthorizedKeys,

  async survey(ctx) {
    const user = passwdEntry((await ctx.fs.readText('/etc/passwd')) ?? '', USER);
    const { owner, sshDir, filePath } = where(user);
    const dirMode = await ctx.fs.mode(sshDir);
    const authorizedKeys = await readHostFile(ctx.fs, filePath, owner);
    return {
      ...(user && { user }),
      ...(dirMode !== undefined && { dirMode: dirMode & 0o7777 }),
      ...(authorizedKeys && { authorizedKeys }),
    };
  },

  plan(view, site) {
    const t = target(view, site.sshAuthorizedKeys);
    const existing = view.authorizedKeys?.content ?? '';
    const keys = site.sshAuthorizedKeys.length;
    if (keys === 0 && existing === t.file.content) return { action: 'noop', reason: 'the site-config has no SSH keys' };
    const changes: Change[] = [];
    if (view.dirMode === undefined) changes.push({ action: 'create', target: t.sshDir, summary: 'folder, mode 0700' });
    else if (view.dirMode !== 0o700)
      changes.push({ action: 'update', target: t.sshDir, summary: `mode 0${view.dirMode.toString(8)}, want 0700` });
    const drift = fileDrift(view.authorizedKeys, t.file);
    if (drift.reasons.length > 0) {
      changes.push({
        action: drift.exists ? 'update' : 'create',
        target: t.file.path,
        summary: `${keys} site key(s) for ${USER}; other lines kept (${drift.reasons.join('; ')})`,
        diff: keyDiff(existing, t.file.content),
      });
    }
    if (changes.length === 0) return { action: 'noop', reason: `${keys} site key(s) already authorized for ${USER}` };
    return { action: 'change', summary: `authorize ${keys} site key(s) for ${USER}`, changes };
  },

  async apply(ctx, view) {
    const t = target(view, ctx.site.sshAuthorizedKeys);
    await ctx.fs.ensureUserDir(t.sshDir, 0o700, t.owner);
    await writeManagedFile(ctx.fs, t.file);
    ctx.log.info({ file: t.file.path, keys: ctx.site.sshAuthorizedKeys.length }, `authorized_keys for ${USER} written`);
  },
};
