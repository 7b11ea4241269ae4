import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isInside, readBounded } from './read-bounded.js';
import { DocumentError } from './yaml.js';

let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'bounded-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('isInside', () => {
  it('tells a path inside a folder from the folder itself, its parent and its neighbours', () => {
    expect(isInside('/a/b/c', '/a/b')).toBe(true);
    expect(isInside('/a/b/..c', '/a/b')).toBe(true);
    expect(isInside('/a/b', '/a/b')).toBe(false);
    expect(isInside('/a/bc', '/a/b')).toBe(false);
    expect(isInside('/a', '/a/b')).toBe(false);
    expect(isInside('/etc/passwd', '/')).toBe(true);
  });
});

describe('readBounded', () => {
  const read = (name: string, limit?: number) =>
    readBounded(path.join(dir, name), name, { inside: dir, ...(limit !== undefined && { limit }) });

  it('reads a regular file inside the folder, also through a link inside it', async () => {
    writeFileSync(path.join(dir, 'a.yaml'), 'x: 1\n');
    symlinkSync('a.yaml', path.join(dir, 'b.yaml'));
    await expect(read('a.yaml')).resolves.toEqual(Buffer.from('x: 1\n'));
    await expect(read('b.yaml')).resolves.toEqual(Buffer.from('x: 1\n'));
  });

  it('checks the limit it is given before reading, at the byte', async () => {
    writeFileSync(path.join(dir, 'sig'), 'x'.repeat(100));
    await expect(read('sig', 100)).resolves.toHaveLength(100);
    await expect(read('sig', 99)).rejects.toThrow('sig: 100 bytes; the limit is 99');
    truncateSync(path.join(dir, 'sig'), 8 * 1024 * 1024 * 1024);
    await expect(read('sig')).rejects.toThrow(`sig: ${8 * 1024 * 1024 * 1024} bytes; the limit is ${1024 * 1024}`);
  });

  it('refuses links out of the folder, devices, FIFOs and folders without opening them', async () => {
    symlinkSync('/dev/zero', path.join(dir, 'zero'));
    await expect(read('zero')).rejects.toThrow('zero: resolves outside the site-config folder (symlink)');
    await expect(readBounded('/dev/zero', 'zero')).rejects.toThrow('zero: not a regular file');
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    await expect(read('fifo')).rejects.toThrow('fifo: not a regular file');
    mkdirSync(path.join(dir, 'sub'));
    await expect(read('sub')).rejects.toThrow('sub: not a regular file');
    await expect(read('missing')).rejects.toBeInstanceOf(DocumentError);
  });
});
