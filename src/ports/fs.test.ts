/**
 * The root filesystem port on a real temporary folder: what a power cut between a write and its
 * rename leaves behind is cleaned up by the next write of the same file.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRootFs } from './fs.js';

describe('writeAtomic', () => {
  it.each([
    ['a symbolic link', (file: string, other: string) => symlinkSync(other, file), 'a symbolic link'],
    ['a FIFO', (file: string) => execFileSync('mkfifo', [file]), 'a FIFO'],
  ])('refuses a target that is %s, naming it, and writes nothing through it', async (_what, place, kind) => {
    const root = mkdtempSync(path.join(tmpdir(), 'rootfs-'));
    mkdirSync(path.join(root, 'etc'));
    const other = path.join(root, 'other');
    writeFileSync(other, 'untouched\n');
    place(path.join(root, 'etc/b.conf'), other);
    await expect(createRootFs(root).writeAtomic('/etc/b.conf', 'x\n', { mode: 0o600 })).rejects.toThrow(
      `refusing to use /etc/b.conf: it is ${kind}, not a regular file; nothing was written there`,
    );
    expect(readFileSync(other, 'utf8')).toBe('untouched\n');
    expect(readdirSync(path.join(root, 'etc'))).toEqual(['b.conf']);
  });

  it('replaces the file whole with the mode asked for, and leaves no temp file', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rootfs-'));
    const fs = createRootFs(root);
    await fs.writeAtomic('/etc/a/b.conf', 'one\n', { mode: 0o600 });
    await fs.writeAtomic('/etc/a/b.conf', 'two\n', { mode: 0o600 });
    const real = path.join(root, 'etc/a/b.conf');
    expect(readFileSync(real, 'utf8')).toBe('two\n');
    expect(statSync(real).mode & 0o777).toBe(0o600);
    expect(readdirSync(path.dirname(real))).toEqual(['b.conf']);
  });

  it("removes the temp copy an earlier process left before its rename, and only that file's", async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rootfs-'));
    const dir = path.join(root, 'etc/systemd/system/kubelet.service.d');
    mkdirSync(dir, { recursive: true });
    // a run killed between write and rename (pid 4242), and files that only look alike
    for (const name of ['.node-ip.conf.4242.tmp', '.node-ip.conf.tmp', '.other.conf.4242.tmp', 'node-ip.conf.4242.tmp'])
      writeFileSync(path.join(dir, name), 'half');
    await createRootFs(root).writeAtomic('/etc/systemd/system/kubelet.service.d/node-ip.conf', 'x\n', { mode: 0o644 });
    expect(readdirSync(dir).sort()).toEqual([
      '.node-ip.conf.tmp',
      '.other.conf.4242.tmp',
      'node-ip.conf',
      'node-ip.conf.4242.tmp',
    ]);
  });

  it("creates missing folders readable by the services that read them, under the unit's umask 0077", async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rootfs-'));
    const before = process.umask(0o077);
    try {
      await createRootFs(root).writeAtomic('/etc/systemd/system/crio.service.d/a.conf', 'x\n', { mode: 0o644 });
    } finally {
      process.umask(before);
    }
    const mode = (p: string) => statSync(path.join(root, p)).mode & 0o777;
    const made = ['etc/systemd', 'etc/systemd/system', 'etc/systemd/system/crio.service.d'];
    expect(made.map(mode)).toEqual([0o755, 0o755, 0o755]);
    expect(mode('etc/systemd/system/crio.service.d/a.conf')).toBe(0o644);
  });
});
