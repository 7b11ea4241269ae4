/**
 * Locating: what a path names, a native site-config file or folder, or the root of an image-based
 * install's config media, and the folder every other file is read from.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fail } from './fail.js';
import { MANIFEST_FILE } from './ibi/seed-reconfiguration.js';

export const SITE_CONFIG_NAMES = ['site-config.yaml', 'site-config.yml', 'site-config.json'];

/** What a path names: a native site-config file, or the root of an image-based install's config media. */
export interface Located {
  file: string;
  /** the folder every other file is read from (and what a signature covers) */
  dir: string;
  media: 'native' | 'ibi';
}

export const isFile = (candidate: string): Promise<boolean> =>
  stat(candidate).then(
    (s) => s.isFile(),
    () => false,
  );

/** The file a folder holds, native site-config first; undefined when it holds neither kind. */
export async function configFileIn(dir: string): Promise<Omit<Located, 'dir'> | undefined> {
  for (const name of SITE_CONFIG_NAMES) {
    const candidate = path.join(dir, name);
    if (await isFile(candidate)) return { file: candidate, media: 'native' };
  }
  const manifest = path.join(dir, MANIFEST_FILE);
  if (await isFile(manifest)) return { file: manifest, media: 'ibi' };
  return undefined;
}

export async function locate(target: string): Promise<Located> {
  let info;
  try {
    info = await stat(target);
  } catch {
    fail([{ severity: 'error', path: target, message: 'no such file or folder' }]);
  }
  if (!info.isDirectory()) {
    // manifest.json named directly: the media root is two levels up
    if (target.endsWith(path.join(...MANIFEST_FILE.split('/'))))
      return { file: target, dir: path.dirname(path.dirname(target)), media: 'ibi' };
    return { file: target, dir: path.dirname(target), media: 'native' };
  }
  const found = await configFileIn(target);
  if (found) return { ...found, dir: target };
  return fail([
    { severity: 'error', path: target, message: `folder holds no ${SITE_CONFIG_NAMES[0]} and no ${MANIFEST_FILE}` },
  ]);
}
