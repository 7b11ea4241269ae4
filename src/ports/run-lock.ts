/**
 * The run lock: one `run` at a time on a node (the unit at boot, the udev-started one, a technician's
 * manual run). A file in the state folder created with O_EXCL holds the owner's pid, the boot it runs
 * in and its start time, so a lock left by a power cut, a kill or a reused pid is recognised as
 * stale and taken over; a live owner makes the second run refuse at once (exit 3). `run`, `factory
 * prepare` and `factory seal` take it; `plan`, `validate`, `status` and `factory check` change nothing.
 */
import { constants } from 'node:fs';
import { link, open, readFile, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { RefusedError } from '../base/errors.js';
import type { RootFs } from './fs.js';

export const LOCK_FILE = 'run.lock';

interface Owner {
  pid: number;
  bootId: string;
  /** clock ticks since boot at which the process started (/proc/PID/stat field 22) */
  startTime: string;
}

export interface RunLock {
  release(): Promise<void>;
}

const BOOT_ID = '/proc/sys/kernel/random/boot_id';

async function startTimeOf(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  // the command name (field 2) may hold spaces and parentheses: count from the last ')'
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

async function currentOwner(): Promise<Owner> {
  return {
    pid: process.pid,
    bootId: (await readFile(BOOT_ID, 'utf8')).trim(),
    startTime: (await startTimeOf(process.pid)) ?? '',
  };
}

function parseOwner(text: string): Owner | undefined {
  try {
    const value = JSON.parse(text) as Partial<Owner>;
    if (typeof value.pid === 'number' && typeof value.bootId === 'string' && typeof value.startTime === 'string')
      return value as Owner;
  } catch {
    // an unreadable lock (a power cut while it was written) belongs to no one alive
  }
  return undefined;
}

/** The owner is alive when it runs in this boot under the same pid, started at the same time. */
async function alive(owner: Owner | undefined, me: Owner): Promise<boolean> {
  if (!owner || owner.bootId !== me.bootId) return false;
  return (await startTimeOf(owner.pid)) === owner.startTime;
}

async function create(file: string, me: Owner): Promise<boolean> {
  let handle;
  try {
    handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    await handle.writeFile(JSON.stringify(me));
    await handle.sync();
  } finally {
    await handle.close();
  }
  return true;
}

/** removes `folder` and its parents up to `top`, each only while empty (a run may have written there) */
async function removeEmptyFolders(fs: RootFs, folder: string, top: string): Promise<void> {
  for (let dir = folder; dir.length >= top.length; dir = path.posix.dirname(dir)) {
    try {
      await rmdir(fs.resolve(dir));
    } catch {
      return;
    }
  }
}

/**
 * Takes the lock or refuses naming its owner. A stale lock is moved to a private name first, so of
 * two runs that find it stale at once only one removes it; should the one moved be a new live lock
 * (the other run took over in between), it is put back and this run refuses.
 */
export async function acquireRunLock(fs: RootFs, stateDir: string): Promise<RunLock> {
  // the folders made only for the lock go again with it: a run that changed nothing leaves nothing
  const firstMade = await fs.mkdirp(stateDir, 0o700);
  const file = fs.resolve(path.posix.join(stateDir, LOCK_FILE));
  const me = await currentOwner();
  const release = async () => {
    const owner = parseOwner(await readFile(file, 'utf8').catch(() => ''));
    if (owner?.pid === me.pid && owner.startTime === me.startTime) await rm(file, { force: true });
    if (firstMade !== undefined) await removeEmptyFolders(fs, stateDir, firstMade);
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    if (await create(file, me)) return { release };
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const owner = parseOwner(text);
    if (await alive(owner, me)) throw held(owner!);
    const aside = `${file}.${me.pid}.stale`;
    try {
      await rename(file, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    const moved = await readFile(aside, 'utf8').catch(() => '');
    if (moved !== text) {
      await link(aside, file).catch(() => undefined);
      await rm(aside, { force: true });
      const other = parseOwner(moved);
      if (other) throw held(other);
      continue;
    }
    await rm(aside, { force: true });
  }
  throw new RefusedError(`the run lock ${file} keeps changing hands; another run is starting`);
}

function held(owner: Owner): RefusedError {
  return new RefusedError(`another run holds the lock (pid ${owner.pid}); nothing was changed by this one`);
}
