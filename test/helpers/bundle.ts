/** A support bundle, unpacked: what a support engineer reads after `tar xzf`. */
import { mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { extract } from 'tar';
import { BUNDLE_DIR } from '../../src/support/bundle.js';

/** every file of a bundle, by its name in the bundle (`journal/kubelet.txt`), extracted into `into` */
export function unpackBundle(archive: string, into: string): Map<string, string> {
  mkdirSync(into, { recursive: true });
  extract({ file: archive, cwd: into, sync: true });
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else files.set(path.relative(path.join(into, BUNDLE_DIR), p), readFileSync(p, 'utf8'));
    }
  };
  walk(into);
  return files;
}
