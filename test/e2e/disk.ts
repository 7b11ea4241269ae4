// Writes files into a raw ext4 image without mounting it: no loop device, no nbd, no root mount
// needed, only e2fsprogs' debugfs. This is how the factory MachineConfig content (files and units)
// and the agent's build output are laid into a node image before it boots.
//
// debugfs exits 0 even when a command fails, prints a version banner on stderr and echoes every
// command on stdout, so the result is judged by its output: each command is planned against the
// image first (a read-only `stat` pass), so that in the write pass every command must succeed, and
// any stdout line that is not an echo ("debugfs: ...") or "Allocated inode: N", and any stderr line
// but the banner, is an error.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile as readHostFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';

export interface DiskFile {
  /** absolute path inside the image */
  path: string;
  /** permission bits, e.g. 0o644 (default), 0o755, 0o600 */
  mode?: number;
  contents: Buffer | string;
  uid?: number;
  gid?: number;
}

export interface DiskDir {
  path: string;
  type: 'dir';
  /** default 0o755 */
  mode?: number;
  uid?: number;
  gid?: number;
}

export interface DiskSymlink {
  path: string;
  type: 'symlink';
  target: string;
}

export type DiskEntry = DiskFile | DiskDir | DiskSymlink;

type InodeType = 'directory' | 'regular' | 'symlink' | 'other';

function isDir(e: DiskEntry): e is DiskDir {
  return 'type' in e && e.type === 'dir';
}
function isSymlink(e: DiskEntry): e is DiskSymlink {
  return 'type' in e && e.type === 'symlink';
}

/** A path debugfs can take in double quotes: absolute, normalised, no quote, newline or NUL. */
function checkPath(p: string): string {
  if (!p.startsWith('/')) throw new Error(`disk: path must be absolute: ${p}`);
  if (/["\n\r\0]/.test(p)) throw new Error(`disk: unsupported character in path: ${JSON.stringify(p)}`);
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

const q = (s: string): string => `"${s}"`;

function ancestors(p: string): string[] {
  const out: string[] = [];
  let d = posix.dirname(p);
  while (d !== '/') {
    out.unshift(d);
    d = posix.dirname(d);
  }
  return out;
}

interface DebugfsOutput {
  stdout: string;
  stderr: string;
}

function debugfs(args: string[]): Promise<DebugfsOutput> {
  return new Promise((resolve, reject) => {
    execFile(
      'debugfs',
      args,
      { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, DEBUGFS_PAGER: '__none__', PAGER: '__none__' } },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`debugfs ${args.join(' ')}: ${err.message}\n${stderr}`));
        else resolve({ stdout, stderr });
      },
    );
  });
}

async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'sno-debugfs-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Inode type of each path in the image (missing paths are absent from the map). Read-only. */
export async function statPaths(imagePath: string, paths: string[]): Promise<Map<string, InodeType>> {
  const result = new Map<string, InodeType>();
  const unique = [...new Set(paths.map(checkPath))];
  if (unique.length === 0) return result;
  return withTempDir(async (dir) => {
    const cmdFile = join(dir, 'stat.cmds');
    await writeFile(cmdFile, unique.map((p) => `stat ${q(p)}\n`).join(''));
    const { stdout } = await debugfs(['-f', cmdFile, imagePath]);
    // stdout: "debugfs: stat "/p"" then, only when it exists, "Inode: N   Type: directory ..."
    let current: string | undefined;
    for (const line of stdout.split('\n')) {
      const echo = /^debugfs: stat "(.*)"$/.exec(line);
      if (echo) {
        current = echo[1];
        continue;
      }
      const inode = /^Inode: \d+\s+Type: (\S+)/.exec(line);
      if (inode && current !== undefined && !result.has(current)) {
        const t = inode[1];
        result.set(current, t === 'directory' || t === 'regular' || t === 'symlink' ? t : 'other');
      }
    }
    return result;
  });
}

function octal(n: number): string {
  return n.toString(8);
}

/**
 * Writes files, directories and symlinks into the ext4 image. Missing parent directories are
 * created 0755 root:root; existing files and symlinks are replaced; existing directories named as
 * `type: 'dir'` entries get the given mode and owner. Entries apply in order.
 */
export async function installFiles(imagePath: string, entries: DiskEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const norm = entries.map((e) => ({ ...e, path: checkPath(e.path) }));
  for (const e of norm) if (e.path === '/') throw new Error('disk: cannot write /');
  const wanted = new Set<string>();
  for (const e of norm) {
    for (const a of ancestors(e.path)) wanted.add(a);
    wanted.add(e.path);
  }
  const existing = await statPaths(imagePath, [...wanted]);

  await withTempDir(async (dir) => {
    const cmds: string[] = [];
    const state = new Map(existing);
    const ensureParents = (p: string): void => {
      for (const a of ancestors(p)) {
        const t = state.get(a);
        if (t === undefined) {
          cmds.push(`mkdir ${q(a)}`);
          state.set(a, 'directory');
        } else if (t !== 'directory' && t !== 'symlink') {
          throw new Error(`disk: ${a} exists in ${imagePath} and is not a directory`);
        }
      }
    };
    const removeOld = (p: string): void => {
      const t = state.get(p);
      if (t === 'directory') throw new Error(`disk: ${p} is a directory in ${imagePath}`);
      if (t !== undefined) cmds.push(`rm ${q(p)}`);
      state.delete(p);
    };
    const setOwnerMode = (p: string, typeBits: number, mode: number, uid: number, gid: number): void => {
      cmds.push(`set_inode_field ${q(p)} mode 0${octal(typeBits | (mode & 0o7777))}`);
      cmds.push(`set_inode_field ${q(p)} uid ${uid}`);
      cmds.push(`set_inode_field ${q(p)} gid ${gid}`);
    };

    let n = 0;
    for (const e of norm) {
      ensureParents(e.path);
      if (isDir(e)) {
        const t = state.get(e.path);
        if (t === undefined) {
          cmds.push(`mkdir ${q(e.path)}`);
          state.set(e.path, 'directory');
        } else if (t !== 'directory') {
          throw new Error(`disk: ${e.path} exists in ${imagePath} and is not a directory`);
        }
        setOwnerMode(e.path, 0o040000, e.mode ?? 0o755, e.uid ?? 0, e.gid ?? 0);
      } else if (isSymlink(e)) {
        if (/["\n\r\0]/.test(e.target)) throw new Error(`disk: unsupported symlink target ${e.target}`);
        removeOld(e.path);
        cmds.push(`cd ${q(posix.dirname(e.path))}`);
        cmds.push(`symlink ${q(posix.basename(e.path))} ${q(e.target)}`);
        state.set(e.path, 'symlink');
      } else {
        const host = join(dir, `f${n++}`);
        await writeFile(host, e.contents);
        removeOld(e.path);
        cmds.push(`cd ${q(posix.dirname(e.path))}`);
        cmds.push(`write ${q(host)} ${q(posix.basename(e.path))}`);
        setOwnerMode(e.path, 0o100000, e.mode ?? 0o644, e.uid ?? 0, e.gid ?? 0);
        state.set(e.path, 'regular');
      }
    }
    await runWriteCommands(imagePath, dir, cmds);
  });
}

async function runWriteCommands(imagePath: string, dir: string, cmds: string[]): Promise<void> {
  const cmdFile = join(dir, 'write.cmds');
  await writeFile(cmdFile, cmds.join('\n') + '\n');
  const { stdout, stderr } = await debugfs(['-w', '-f', cmdFile, imagePath]);
  const bad = [
    ...stdout.split('\n').filter((l) => l !== '' && !l.startsWith('debugfs') && !l.startsWith('Allocated inode')),
    ...stderr.split('\n').filter((l) => l.trim() !== '' && !/^debugfs \d+\.\d+/.test(l)),
  ];
  if (bad.length > 0) {
    throw new Error(`debugfs -w ${imagePath} failed:\n${bad.join('\n')}\ncommands:\n${cmds.join('\n')}`);
  }
}

/** Removes files and symlinks (not directories); missing paths are ignored. */
export async function removeFiles(imagePath: string, paths: string[]): Promise<void> {
  const existing = await statPaths(imagePath, paths);
  const cmds: string[] = [];
  for (const [p, t] of existing) {
    if (t === 'directory') throw new Error(`disk: ${p} is a directory in ${imagePath}`);
    cmds.push(`rm ${q(p)}`);
  }
  if (cmds.length === 0) return;
  await withTempDir((dir) => runWriteCommands(imagePath, dir, cmds));
}

/** Contents of a regular file in the image, or null when it does not exist. Read-only. */
export async function readFile(imagePath: string, path: string): Promise<Buffer | null> {
  const p = checkPath(path);
  const t = (await statPaths(imagePath, [p])).get(p);
  if (t === undefined) return null;
  if (t !== 'regular') throw new Error(`disk: ${p} is not a regular file in ${imagePath}`);
  return withTempDir(async (dir) => {
    const out = join(dir, 'out');
    await debugfs(['-R', `dump ${q(p)} ${q(out)}`, imagePath]);
    return readHostFile(out);
  });
}

const UNIT_DIRS = ['/etc/systemd/system', '/usr/lib/systemd/system'];

/**
 * Enables a unit offline, as `systemctl enable` would for `WantedBy=<target>`: a symlink
 * /etc/systemd/system/<target>.wants/<unit> to the unit file (found in /etc/systemd/system, then
 * /usr/lib/systemd/system; a template instance `a@b.service` links to `a@.service`).
 */
export async function enableUnit(imagePath: string, unit: string, target = 'multi-user.target'): Promise<void> {
  if (unit.includes('/') || target.includes('/')) throw new Error(`disk: bad unit or target name: ${unit} ${target}`);
  const template = unit.replace(/@[^.]*\./, '@.');
  const candidates = UNIT_DIRS.flatMap((d) => [`${d}/${unit}`, ...(template !== unit ? [`${d}/${template}`] : [])]);
  const existing = await statPaths(imagePath, candidates);
  const file = candidates.find((c) => existing.get(c) === 'regular' || existing.get(c) === 'symlink');
  if (!file) throw new Error(`disk: unit ${unit} not found in ${UNIT_DIRS.join(' or ')} of ${imagePath}`);
  await installFiles(imagePath, [
    { path: `/etc/systemd/system/${target}.wants/${unit}`, type: 'symlink', target: file },
  ]);
}

/**
 * Contents of a file as the node will see it at its next mount after a power cut: debugfs reads
 * the filesystem without replaying its journal, where the last committed writes still sit, so the
 * journal is replayed first (e2fsck -E journal_only) on a sparse copy; the image stays untouched.
 */
export async function readFileAfterCrash(imagePath: string, path: string): Promise<Buffer | null> {
  return withTempDir(async (dir) => {
    const copy = join(dir, 'replayed.raw');
    await new Promise<void>((res, rej) =>
      execFile('cp', ['--sparse=always', imagePath, copy], (err, _o, stderr) =>
        err ? rej(new Error(`cp: ${err.message}\n${stderr}`)) : res(),
      ),
    );
    await new Promise<void>((res, rej) =>
      // exit 1: the journal was replayed (the filesystem "was modified"); 0: there was nothing to replay
      execFile('e2fsck', ['-E', 'journal_only', '-p', copy], (err, stdout, stderr) =>
        err && (err as { code?: number }).code !== 1
          ? rej(new Error(`e2fsck -E journal_only ${copy}: ${err.message}\n${stdout}${stderr}`))
          : res(),
      ),
    );
    return readFile(copy, path);
  });
}
