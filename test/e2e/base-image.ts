/**
 * The VM suite's base image: build-base.sh makes it once and caches it (SNO_RELOCATE_VM_CACHE,
 * default /var/cache/sno-relocate-vm); each run reads it and copies it, never writes it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execOut, track } from './processes.js';

const BUILD_SCRIPT = fileURLToPath(new URL('./build-base.sh', import.meta.url));

export interface BaseImage {
  dir: string;
  /** raw ext4 root filesystem; never written by the suite */
  disk: string;
  /** uncompressed PVH kernel */
  kernel: string;
  initrd: string;
  /** private key for root@guest */
  sshKey: string;
  kernelVersion: string;
}

let basePromise: Promise<BaseImage> | undefined;

/**
 * Runs build-base.sh (a cache hit takes milliseconds; a cold build 1-2 minutes and needs root and
 * the Debian mirror) and returns the cached image files.
 */
export function ensureBaseImage(): Promise<BaseImage> {
  basePromise ??= (async () => {
    const dir = await new Promise<string>((res, rej) => {
      const child = track(spawn('bash', [BUILD_SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'] }));
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.once('error', rej);
      child.once('exit', (code) => {
        const last = out.trim().split('\n').pop() ?? '';
        if (code === 0 && last.startsWith('/')) res(last);
        else rej(new Error(`build-base.sh failed (exit ${code})`));
      });
    });
    if (!existsSync(join(dir, '.complete'))) throw new Error(`base image in ${dir} is incomplete`);
    return {
      dir,
      disk: join(dir, 'base.raw'),
      kernel: join(dir, 'vmlinux'),
      initrd: join(dir, 'initrd.img'),
      sshKey: join(dir, 'id_ed25519'),
      kernelVersion: (await readFile(join(dir, 'kernel-version'), 'utf8')).trim(),
    };
  })();
  basePromise.catch(() => (basePromise = undefined));
  return basePromise;
}

/** A writable sparse copy of base.raw, to lay the agent and units into with disk.ts. */
export async function copyBaseDisk(dest: string): Promise<string> {
  const base = await ensureBaseImage();
  await mkdir(resolve(dest, '..'), { recursive: true });
  await execOut('cp', ['--sparse=always', base.disk, dest]);
  return dest;
}
