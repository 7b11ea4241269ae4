/** A fingerprint of every file under a folder, to prove that a command changed nothing there. */
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

export function snapshotTree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      const rel = path.relative(root, full);
      const st = lstatSync(full);
      if (st.isDirectory()) {
        out[`${rel}/`] = `dir ${(st.mode & 0o7777).toString(8)}`;
        walk(full);
      } else if (st.isSymbolicLink()) {
        out[rel] = `link ${readlinkSync(full)}`;
      } else {
        out[rel] =
          `file ${(st.mode & 0o7777).toString(8)} ${createHash('sha256').update(readFileSync(full)).digest('hex')}`;
      }
    }
  };
  walk(root);
  return out;
}

/**
 * The host as a refused or invalid site-config must leave it: every file but the run's own record of
 * the relocation figures (src/engine/sli.ts), which counts refusals too and is the one thing such a
 * run writes, and the agent's state folder that holds it.
 */
export function hostTree(root: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(snapshotTree(root)).filter(
      ([rel]) => rel !== 'var/lib/sno-relocate/sli.json' && rel !== 'var/lib/sno-relocate/',
    ),
  );
}
