// USB stick images for the VM suite, made without mounting: mkfs.ext4 -d for ext4, mkfs.vfat and
// mtools for FAT, xorriso for ISO 9660. vm.ts attaches them as qemu usb-storage devices (at boot,
// or hot-plugged); the guest sees a whole-disk filesystem on /dev/sdX (no partition table).
//
// Label limits, and the label the guest's udev shows in /dev/disk/by-label/ (checked in a guest):
//   vfat     11 characters. Shown as written: mkfs.vfat keeps a lowercase label (with a warning),
//            but FAT labels are conventionally uppercase and other tools uppercase them.
//   ext4     16 bytes, shown as given: 'cluster-config' (14) fits.
//   iso9660  32 characters, shown as given (xorriso, Joliet + Rock Ridge): the only one of the three
//            that fits 'relocation-config' (17). The image-based install tooling ships its
//            configuration as an ISO as well. Read-only.
// Default fs: the first of vfat, ext4, iso9660 that fits the label.
//
// `partitioned`: the filesystem goes into partition 1 of an MBR partition table (starting at 1 MiB
// and filling the stick, as fdisk lays out a stick a person partitions), so the guest sees the
// label on /dev/sdX1 instead; ext4 or vfat only (an ISO image is written whole).
import { execFile } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';

export type StickFs = 'vfat' | 'ext4' | 'iso9660';

export interface StickFile {
  /** relative path on the stick, e.g. 'site-config.yaml' or 'certs/ingress.crt' */
  name: string;
  contents: Buffer | string;
  /** ext4 and iso9660 only; default 0o644 */
  mode?: number;
}

export interface StickOptions {
  label: 'cluster-config' | 'relocation-config' | (string & {});
  /** default: the first of vfat (11), ext4 (16), iso9660 (32) whose label limit fits */
  fs?: StickFs;
  files: StickFile[];
  /** default 16 MiB */
  sizeMiB?: number;
  /** folder for the image; default a new temporary folder */
  dir?: string;
  /** file name of the image; default `<label>.img` */
  fileName?: string;
  /** the filesystem in partition 1 of an MBR partition table; default false (the whole device) */
  partitioned?: boolean;
}

const LABEL_MAX: Record<StickFs, number> = { vfat: 11, ext4: 16, iso9660: 32 };

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { env: { ...process.env, ...env } }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`));
      else resolve();
    });
  });
}

function checkName(name: string): string {
  const n = posix.normalize(name);
  if (n.startsWith('/') || n.startsWith('..') || n === '.' || n === '') throw new Error(`stick: bad file name ${name}`);
  return n;
}

export function defaultStickFs(label: string): StickFs {
  const n = Buffer.byteLength(label);
  if (n <= LABEL_MAX.vfat) return 'vfat';
  if (n <= LABEL_MAX.ext4) return 'ext4';
  return 'iso9660';
}

const SECTOR = 512;
const PARTITION_START = 2048;
/** MBR partition types: Linux, and FAT32 with LBA */
const MBR_TYPE: Record<'ext4' | 'vfat', number> = { ext4: 0x83, vfat: 0x0c };

/** Sector 0 of a disk with one primary partition from PARTITION_START to the end. */
function mbr(totalSectors: number, type: number): Buffer {
  const b = Buffer.alloc(SECTOR);
  b.writeUInt32LE(0x5e1ec7ed, 440); // disk signature
  const entry = 446;
  b.writeUInt8(0x00, entry); // not bootable
  b.set([0xfe, 0xff, 0xff], entry + 1); // CHS start: beyond CHS, use LBA
  b.writeUInt8(type, entry + 4);
  b.set([0xfe, 0xff, 0xff], entry + 5); // CHS end
  b.writeUInt32LE(PARTITION_START, entry + 8);
  b.writeUInt32LE(totalSectors - PARTITION_START, entry + 12);
  b.writeUInt16LE(0xaa55, 510);
  return b;
}

/** Makes a stick image and returns its path. */
export async function makeStick(opts: StickOptions): Promise<string> {
  if (opts.partitioned) return partitionedStick(opts);
  const fs = opts.fs ?? defaultStickFs(opts.label);
  if (opts.label === '' || /[/\s"]/.test(opts.label)) throw new Error(`stick: bad label ${JSON.stringify(opts.label)}`);
  if (Buffer.byteLength(opts.label) > LABEL_MAX[fs]) {
    throw new Error(`stick: ${fs} labels are at most ${LABEL_MAX[fs]} characters: ${opts.label}`);
  }
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'sno-stick-')));
  await mkdir(dir, { recursive: true });
  const image = join(dir, opts.fileName ?? `${opts.label}.img`);
  await rm(image, { force: true });
  const files = opts.files.map((f) => ({ ...f, name: checkName(f.name) }));

  if (fs === 'iso9660') {
    const content = await mkdtemp(join(tmpdir(), 'sno-stick-content-'));
    try {
      for (const f of files) {
        const p = join(content, f.name);
        await mkdir(dirname(p), { recursive: true });
        await writeFile(p, f.contents, { mode: f.mode ?? 0o644 });
      }
      await run('xorriso', ['-as', 'mkisofs', '-quiet', '-V', opts.label, '-J', '-R', '-o', image, content]);
    } finally {
      await rm(content, { recursive: true, force: true });
    }
    return image;
  }

  await writeFile(image, '');
  await truncate(image, (opts.sizeMiB ?? 16) * 1024 * 1024);
  if (fs === 'ext4') {
    const content = await mkdtemp(join(tmpdir(), 'sno-stick-content-'));
    try {
      for (const f of files) {
        const p = join(content, f.name);
        await mkdir(dirname(p), { recursive: true });
        await writeFile(p, f.contents, { mode: f.mode ?? 0o644 });
      }
      await run('mkfs.ext4', ['-q', '-F', '-L', opts.label, '-E', 'root_owner=0:0', '-d', content, image]);
    } finally {
      await rm(content, { recursive: true, force: true });
    }
    return image;
  }

  await run('mkfs.vfat', ['-n', opts.label, image]);
  const env = { MTOOLS_SKIP_CHECK: '1' };
  const tmp = await mkdtemp(join(tmpdir(), 'sno-stick-content-'));
  try {
    const made = new Set<string>();
    for (const [i, f] of files.entries()) {
      const parts = f.name.split('/');
      for (let k = 1; k < parts.length; k++) {
        const d = parts.slice(0, k).join('/');
        if (!made.has(d)) {
          await run('mmd', ['-i', image, `::${d}`], env);
          made.add(d);
        }
      }
      const host = join(tmp, `f${i}`);
      await writeFile(host, f.contents);
      await run('mcopy', ['-o', '-i', image, host, `::${f.name}`], env);
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return image;
}

/** The filesystem made as for a whole device, then laid into partition 1 of an MBR table. */
async function partitionedStick(opts: StickOptions): Promise<string> {
  const fs = opts.fs ?? defaultStickFs(opts.label);
  if (fs === 'iso9660') throw new Error('stick: an iso9660 image is written whole, not into a partition');
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'sno-stick-')));
  await mkdir(dir, { recursive: true });
  const image = join(dir, opts.fileName ?? `${opts.label}.img`);
  const sizeMiB = opts.sizeMiB ?? 16;
  const part = await makeStick({
    ...opts,
    fs,
    partitioned: false,
    dir,
    fileName: `${opts.fileName ?? opts.label}.partition`,
    sizeMiB: sizeMiB - 1,
  });
  try {
    const totalSectors = (sizeMiB * 1024 * 1024) / SECTOR;
    await writeFile(image, mbr(totalSectors, MBR_TYPE[fs]));
    await truncate(image, PARTITION_START * SECTOR);
    await appendFile(image, await readFile(part));
    return image;
  } finally {
    await rm(part, { force: true });
  }
}
