/**
 * The stick: mounted read-only, nosuid, nodev, noexec, and unmounted as soon as the site-config
 * has been read, before any step runs, also when the site-config on it is refused. The exec port
 * records the mount and umount calls (mounting needs a real device, which a test cannot have)
 * and plays the kernel's part by showing the stick's files at the mount point.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, loadSite } from '../../src/cli/runtime.js';
import { parseCommandLine } from '../../src/cli/args.js';
import type { Exec } from '../../src/ports/exec.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { EXAMPLE, REPO } from '../helpers/cli.js';

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

function stickNode(content: (dir: string) => void) {
  root = mkdtempSync(path.join(tmpdir(), 'stick-'));
  layFactoryNode(root);
  mkdirSync(path.join(root, 'dev/disk/by-label'), { recursive: true });
  writeFileSync(path.join(root, 'dev/disk/by-label/relocation-config'), '');
  const calls: string[][] = [];
  const exec: Exec = {
    async run(command, args) {
      calls.push([command, ...args]);
      const target = args.at(-1)!;
      if (command === 'mount') content(target);
      if (command === 'umount') rmSync(target, { recursive: true, force: true });
      return { stdout: '', stderr: '', code: 0 };
    },
  };
  const rt = { ...createRuntime(parseCommandLine(['run', '--root', root]).flags), exec };
  return { rt, calls };
}

describe('the stick', () => {
  it('is mounted read-only and inert, and unmounted right after the site-config is read', async () => {
    const { rt, calls } = stickNode((dir) => cpSync(EXAMPLE, dir, { recursive: true }));
    const loaded = await loadSite(rt, undefined);
    expect(loaded?.site.name).toBe('store-0042');
    const mountPoint = path.join(root, 'run/sno-relocate/relocation-config');
    expect(calls).toEqual([
      [
        'mount',
        '-t',
        'vfat,iso9660,ext4',
        '-o',
        'ro,nosuid,nodev,noexec',
        path.join(root, 'dev/disk/by-label/relocation-config'),
        mountPoint,
      ],
      ['umount', mountPoint],
    ]);
  });

  it('may hold an image-based install config image instead: manifest.json is found and translated', async () => {
    const { rt, calls } = stickNode((dir) =>
      cpSync(path.join(REPO, 'examples/ibi-config-media'), dir, { recursive: true }),
    );
    const loaded = await loadSite(rt, undefined);
    expect(loaded?.media).toBe('ibi');
    expect(loaded?.site.baseDomain).toBe('store43.example.com');
    expect(calls.map((c) => c[0])).toEqual(['mount', 'umount']);
  });

  it('is unmounted also when its site-config is refused', async () => {
    const { rt, calls } = stickNode((dir) => {
      cpSync(EXAMPLE, dir, { recursive: true });
      writeFileSync(path.join(dir, 'site-config.yaml'), 'apiVersion: sno-relocate/v0\n');
    });
    await expect(loadSite(rt, undefined)).rejects.toMatchObject({ exitCode: 2 });
    expect(calls.map((c) => c[0])).toEqual(['mount', 'umount']);
  });
});
