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
import { isSealed, type Sealing, sealing, type Unsealer } from './sealed.js';
import type { SiteFile } from './site.js';

export const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

export interface FileReader {
  read(fieldPath: string, name: string): Promise<Buffer>;
  digests: SiteFile[];
  dir: string;
  realDir: string;
  /** the sealed fields met so far, opened with the node's key where there is one */
  seal: Sealing;
}

export async function fileReader(dir: string, findings: Finding[], unsealer?: Unsealer): Promise<FileReader> {
  const realDir = await realpath(dir).catch(() => dir);
  const digests: SiteFile[] = [];
  const seal = sealing(realDir, unsealer);
  return {
    digests,
    dir,
    realDir,
    seal,
    async read(fieldPath, name) {
      let data: Buffer;
      try {
        data = await readBounded(path.join(realDir, name), name, { inside: realDir });
      } catch (err) {
        findings.push({
          severity: 'error',
          path: fieldPath,
          message: err instanceof Error ? err.message : String(err),
        });
        return Buffer.alloc(0);
      }
      // the digest is the ciphertext's: what the signature covers
      digests.push({ name, sha256: sha256(data) });
      if (!isSealed(data)) return data;
      // a sealed value that does not open is a refusal (exit 3), not a finding
      return (await seal.open(data.toString('utf8'), fieldPath, findings)) ?? Buffer.alloc(0);
    },
  };
}
