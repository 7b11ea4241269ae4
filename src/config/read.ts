/**
 * Reading: every file of a site-config folder is read with bounds, confined to the folder, and
 * its digest recorded (what a signature covers and what the state file hashes). A file that cannot
 * be read is a finding on the field that named it.
 */
import { createHash } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import type { Finding } from '../base/findings.js';
import { readBounded } from './read-bounded.js';
import type { SiteFile } from './site.js';

export const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

export interface FileReader {
  read(fieldPath: string, name: string): Promise<Buffer>;
  digests: SiteFile[];
  dir: string;
  realDir: string;
}

export async function fileReader(dir: string, findings: Finding[]): Promise<FileReader> {
  const realDir = await realpath(dir).catch(() => dir);
  const digests: SiteFile[] = [];
  return {
    digests,
    dir,
    realDir,
    async read(fieldPath, name) {
      try {
        const data = await readBounded(path.join(realDir, name), name, { inside: realDir });
        digests.push({ name, sha256: sha256(data) });
        return data;
      } catch (err) {
        findings.push({
          severity: 'error',
          path: fieldPath,
          message: err instanceof Error ? err.message : String(err),
        });
        return Buffer.alloc(0);
      }
    },
  };
}
