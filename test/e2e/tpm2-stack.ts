/**
 * The TPM2 software stack systemd-creds loads when it seals to a TPM2 (tpm2-tss: the ESAPI, its
 * marshalling, system API and response-code libraries, the TCTI loader and the device TCTI), which
 * RHCOS ships and the suite's minimal Debian image does not. Debian's packages are downloaded once
 * (apt-get download) into the VM image cache, beside the base images, and unpacked on the host;
 * their libraries go into a node image under the names the loader looks for.
 */
import { execFile } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { promisify } from 'node:util';
import { ensureBaseImage } from './base-image.js';
import type { DiskEntry } from './disk.js';

const exec = promisify(execFile);
const PACKAGES = [
  'libtss2-esys-3.0.2-0',
  'libtss2-mu0',
  'libtss2-rc0',
  'libtss2-sys1',
  'libtss2-tctildr0',
  'libtss2-tcti-device0',
];
const LIB_DIR = '/usr/lib/x86_64-linux-gnu';

/** The stack's shared libraries and their soname links, as entries for installFiles(). */
export async function tpm2StackFiles(): Promise<DiskEntry[]> {
  const cache = join(dirname((await ensureBaseImage()).dir), 'tpm2-tss');
  await mkdir(cache, { recursive: true });
  const debs = () => readdir(cache).then((names) => names.filter((n) => n.endsWith('.deb')));
  const have = await debs();
  const wanted = PACKAGES.filter((p) => !have.some((d) => d.startsWith(`${p}_`)));
  if (wanted.length > 0) await exec('apt-get', ['download', '-qq', ...wanted], { cwd: cache });
  const tree = await mkdtemp(join(tmpdir(), 'sno-e2e-tpm2-tss-'));
  try {
    for (const deb of await debs()) await exec('dpkg-deb', ['-x', join(cache, deb), tree]);
    const lib = join(tree, LIB_DIR);
    const entries: DiskEntry[] = [];
    for (const name of (await readdir(lib)).filter((n) => /^libtss2-.*\.so\.\d/.test(n))) {
      const path = posix.join(LIB_DIR, name);
      const file = join(lib, name);
      entries.push(
        (await lstat(file)).isSymbolicLink()
          ? { path, type: 'symlink', target: await readlink(file) }
          : { path, mode: 0o644, contents: await readFile(file) },
      );
    }
    return entries;
  } finally {
    await rm(tree, { recursive: true, force: true });
  }
}
