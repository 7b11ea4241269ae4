/** What a path names: which file is the site-config, which folder its files come from, which kind. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../base/errors.js';
import { MANIFEST_FILE } from './ibi/seed-reconfiguration.js';
import { locate } from './locate.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'locate-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const place = (...names: string[]) => {
  for (const name of names) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), '{}');
  }
};

describe('locate', () => {
  it.each([
    ['a native file in the folder', ['site-config.yml'], 'site-config.yml', 'native'],
    ['the native file before the media manifest', ['site-config.yaml', MANIFEST_FILE], 'site-config.yaml', 'native'],
    ['the media manifest when no native file', [MANIFEST_FILE], MANIFEST_FILE, 'ibi'],
  ] as const)('a folder holding %s', async (_name, files, file, media) => {
    place(...files);
    await expect(locate(dir)).resolves.toEqual({ file: path.join(dir, file), dir, media });
  });

  it('takes a file named directly as native, its folder beside it', async () => {
    place('store.yaml');
    await expect(locate(path.join(dir, 'store.yaml'))).resolves.toEqual({
      file: path.join(dir, 'store.yaml'),
      dir,
      media: 'native',
    });
  });

  it('takes the media manifest named directly, its media root two levels up', async () => {
    place(MANIFEST_FILE);
    await expect(locate(path.join(dir, MANIFEST_FILE))).resolves.toEqual({
      file: path.join(dir, MANIFEST_FILE),
      dir,
      media: 'ibi',
    });
  });

  it.each([
    ['a missing path', () => path.join(dir, 'absent'), 'no such file or folder'],
    ['a folder holding neither kind', () => dir, `folder holds no site-config.yaml and no ${MANIFEST_FILE}`],
  ])('refuses %s (exit 2), naming the path', async (_name, target, message) => {
    const err: unknown = await locate(target()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err).toMatchObject({ exitCode: 2, findings: [{ severity: 'error', path: target(), message }] });
  });
});
