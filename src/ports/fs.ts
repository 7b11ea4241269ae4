/**
 * The host filesystem, rooted at --root: every host path the agent touches
 * goes through here, so the real binary runs end to end against a temp folder.
 */
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';

export interface WriteOptions {
  mode: number;
  uid?: number;
  gid?: number;
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
  exists(hostPath: string): Promise<boolean>;
  mode(hostPath: string): Promise<number | undefined>;
  size(hostPath: string): Promise<number | undefined>;
  list(hostPath: string): Promise<string[]>;
  mkdirp(hostPath: string, mode?: number): Promise<void>;
  remove(hostPath: string): Promise<void>;
  chmod(hostPath: string, mode: number): Promise<void>;
  /** fsync a folder, so that renames and new files inside it survive a power cut */
  syncDir(hostPath: string): Promise<void>;
}

const isMissing = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === 'ENOENT';

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
    async writeAtomic(hostPath, data, { mode, uid, gid }) {
      const real = resolve(hostPath);
      const dir = path.dirname(real);
      await mkdir(dir, { recursive: true, mode: 0o755 });
      const name = path.basename(real);
      const temp = path.join(dir, tempName(name, process.pid));
      await removeStaleTemps(dir, name);
      // created with the final mode, so a secret is never readable by others, not even briefly
      const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, mode);
      try {
        await handle.writeFile(data);
        await handle.chmod(mode);
        if (uid !== undefined && gid !== undefined && process.getuid?.() === 0) await handle.chown(uid, gid);
        await handle.sync();
      } finally {
        await handle.close();
      }
      try {
        await rename(temp, real);
      } catch (err) {
        await rm(temp, { force: true });
        throw err;
      }
      await fsyncPath(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    },
    exists: async (p) => (await orUndefined(() => lstat(resolve(p)))) !== undefined,
    mode: async (p) => (await orUndefined(() => stat(resolve(p))))?.mode,
    size: async (p) => (await orUndefined(() => stat(resolve(p))))?.size,
    list: async (p) => (await orUndefined(() => readdir(resolve(p)))) ?? [],
    mkdirp: async (p, mode = 0o755) => {
      await mkdir(resolve(p), { recursive: true, mode });
    },
    remove: (p) => rm(resolve(p), { force: true, recursive: true }),
    chmod: (p, mode) => chmod(resolve(p), mode),
    syncDir,
  };
}
