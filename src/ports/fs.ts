/**
 * The host filesystem, rooted at --root: every host path the agent touches
 * goes through here, so the real binary runs end to end against a temp folder.
 */
import { constants, type Stats } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { RefusedError } from '../base/errors.js';

export interface WriteOptions {
  mode: number;
  uid?: number;
  gid?: number;
  /** called with the temp file written and synced, before it is renamed into place */
  beforeRename?: () => Promise<void>;
}

/** The user a folder belongs to (core for its home): files there must be theirs or root's. */
export interface FolderOwner {
  name: string;
  uid: number;
  gid: number;
}

export interface RootFs {
  readonly root: string;
  /** maps an absolute host path to the real path under the root */
  resolve(hostPath: string): string;
  read(hostPath: string): Promise<Buffer | undefined>;
  readText(hostPath: string): Promise<string | undefined>;
  /**
   * temp file + fsync + rename + fsync of the folder: a power cut leaves the old or the new file.
   * A temp file an earlier process left for the same target (a cut before its rename) is removed.
   */
  writeAtomic(hostPath: string, data: string | Buffer, options: WriteOptions): Promise<void>;
  /**
   * Reads a file in a folder another user controls (core's home) without following a link or
   * blocking: a link, FIFO, device or folder in its place (or a link in place of its folder), a file
   * with a second name (hard link), or one owned by neither that user nor root is refused, naming
   * the path. Undefined when missing.
   */
  readUserFile(hostPath: string, owner: FolderOwner): Promise<string | undefined>;
  /**
   * Makes or keeps a folder of that user, mode and owner set on the opened folder itself: a link or
   * anything but a folder in its place, or a folder another user owns, is refused, naming the path.
   */
  ensureUserDir(hostPath: string, mode: number, owner: FolderOwner): Promise<void>;
  exists(hostPath: string): Promise<boolean>;
  mode(hostPath: string): Promise<number | undefined>;
  size(hostPath: string): Promise<number | undefined>;
  list(hostPath: string): Promise<string[]>;
  /** makes the folder and its missing parents; the first folder it made (a host path), if any */
  mkdirp(hostPath: string, mode?: number): Promise<string | undefined>;
  remove(hostPath: string): Promise<void>;
  chmod(hostPath: string, mode: number): Promise<void>;
  /** fsync a folder, so that renames and new files inside it survive a power cut */
  syncDir(hostPath: string): Promise<void>;
}

const isMissing = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === 'ENOENT';

function kindOf(info: Stats): string {
  if (info.isSymbolicLink()) return 'a symbolic link';
  if (info.isDirectory()) return 'a folder';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  return info.isFile() ? 'a file' : 'a device';
}

const unsafe = (hostPath: string, why: string): RefusedError =>
  new RefusedError(`refusing to use ${hostPath}: ${why}; nothing was written there`);

/** A file or folder in a user's folder must be theirs or root's (or this process's own, off a node). */
function checkOwner(hostPath: string, info: Stats, owner: FolderOwner): void {
  const allowed = [owner.uid, 0, process.getuid?.()];
  if (!allowed.includes(info.uid)) throw unsafe(hostPath, `owned by uid ${info.uid}, neither ${owner.name} nor root`);
}

/** A missing target, or a regular file: never write through a link or into a FIFO or device. */
async function checkWriteTarget(hostPath: string, real: string): Promise<void> {
  const info = await lstat(real).catch((err: unknown) => {
    if (isMissing(err)) return undefined;
    throw err;
  });
  if (info && !info.isFile()) throw unsafe(hostPath, `it is ${kindOf(info)}, not a regular file`);
}

const tempName = (name: string, pid: number): string => `.${name}.${pid}.tmp`;

/** Temp files of `name` from other processes: a power cut (or a kill) between write and rename. */
async function removeStaleTemps(dir: string, name: string): Promise<void> {
  const prefix = `.${name}.`;
  const entries = await readdir(dir).catch(() => [] as string[]);
  for (const entry of entries) {
    if (!entry.startsWith(prefix) || entry === tempName(name, process.pid)) continue;
    if (/^\d+\.tmp$/.test(entry.slice(prefix.length))) await rm(path.join(dir, entry), { force: true });
  }
}

/**
 * mkdir -p whose new folders get `mode` whatever the process's umask (the agent's unit has 0077,
 * and a folder such as a unit's drop-in folder must stay readable by the services that read it).
 * Returns the first folder it made (a real path), as node's recursive mkdir does.
 */
async function makeFolders(real: string, mode: number): Promise<string | undefined> {
  const first = await mkdir(real, { recursive: true, mode });
  if (first === undefined) return undefined;
  for (let dir = real; dir.length >= first.length; dir = path.dirname(dir)) await chmod(dir, mode);
  return first;
}

async function fsyncPath(real: string, flags: number): Promise<void> {
  const handle = await open(real, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export function createRootFs(root: string): RootFs {
  const base = path.resolve(root);
  const resolve = (hostPath: string): string => {
    if (!path.isAbsolute(hostPath)) throw new Error(`host path must be absolute: ${hostPath}`);
    const real = path.join(base, path.normalize(hostPath));
    if (real !== base && !real.startsWith(base === '/' ? '/' : base + path.sep))
      throw new Error(`path leaves the root: ${hostPath}`);
    return real;
  };
  const orUndefined = async <T>(fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  };
  const syncDir = (hostPath: string) => fsyncPath(resolve(hostPath), constants.O_RDONLY | constants.O_DIRECTORY);

  return {
    root: base,
    resolve,
    read: (p) => orUndefined(() => readFile(resolve(p))),
    readText: (p) => orUndefined(() => readFile(resolve(p), 'utf8')),
    async writeAtomic(hostPath, data, { mode, uid, gid, beforeRename }) {
      const real = resolve(hostPath);
      const dir = path.dirname(real);
      await makeFolders(dir, 0o755);
      const name = path.basename(real);
      const temp = path.join(dir, tempName(name, process.pid));
      await removeStaleTemps(dir, name);
      await checkWriteTarget(hostPath, real);
      await rm(temp, { force: true });
      // created new (never through a link someone placed under the temp name) with the final mode,
      // so a secret is never readable by others, not even briefly; owner set on the descriptor
      const handle = await open(
        temp,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        mode,
      );
      try {
        await handle.writeFile(data);
        await handle.chmod(mode);
        if (uid !== undefined && gid !== undefined && process.getuid?.() === 0) await handle.chown(uid, gid);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await beforeRename?.();
      try {
        await rename(temp, real);
      } catch (err) {
        await rm(temp, { force: true });
        throw err;
      }
      await fsyncPath(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    },
    async readUserFile(hostPath, owner) {
      // the folder it is in, too: a link there would lead the read anywhere
      const folder = path.posix.dirname(hostPath);
      const parent = await orUndefined(() => lstat(resolve(folder)));
      if (parent === undefined) return undefined;
      if (!parent.isDirectory()) throw unsafe(folder, `it is ${kindOf(parent)}, not a folder`);
      checkOwner(folder, parent, owner);
      let handle;
      try {
        handle = await open(resolve(hostPath), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      } catch (err) {
        if (isMissing(err)) return undefined;
        if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw unsafe(hostPath, 'it is a symbolic link');
        throw err;
      }
      try {
        const info = await handle.stat();
        if (!info.isFile()) throw unsafe(hostPath, `it is ${kindOf(info)}, not a regular file`);
        if (info.nlink > 1) throw unsafe(hostPath, `it has ${info.nlink} names (a hard link to another file)`);
        checkOwner(hostPath, info, owner);
        return await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
    },
    async ensureUserDir(hostPath, mode, owner) {
      const real = resolve(hostPath);
      await makeFolders(path.dirname(real), 0o755);
      await mkdir(real, { mode }).catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      });
      const info = await lstat(real);
      if (!info.isDirectory()) throw unsafe(hostPath, `it is ${kindOf(info)}, not a folder`);
      const handle = await open(real, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch(
        (err: unknown) => {
          throw (err as NodeJS.ErrnoException).code === 'ELOOP' ? unsafe(hostPath, 'it is a symbolic link') : err;
        },
      );
      try {
        checkOwner(hostPath, await handle.stat(), owner);
        await handle.chmod(mode);
        if (process.getuid?.() === 0) await handle.chown(owner.uid, owner.gid);
      } finally {
        await handle.close();
      }
    },
    exists: async (p) => (await orUndefined(() => lstat(resolve(p)))) !== undefined,
    mode: async (p) => (await orUndefined(() => stat(resolve(p))))?.mode,
    size: async (p) => (await orUndefined(() => stat(resolve(p))))?.size,
    list: async (p) => (await orUndefined(() => readdir(resolve(p)))) ?? [],
    mkdirp: async (p, mode = 0o755) => {
      const first = await makeFolders(resolve(p), mode);
      return first === undefined ? undefined : path.posix.join('/', path.relative(base, first));
    },
    remove: (p) => rm(resolve(p), { force: true, recursive: true }),
    chmod: (p, mode) => chmod(resolve(p), mode),
    syncDir,
  };
}
