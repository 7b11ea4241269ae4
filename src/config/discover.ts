/**
 * Finding the site-config when no path is given, in the order SPEC.md fixes:
 * /etc/sno-relocate/site-config.yaml, then a filesystem labelled
 * cluster-config or relocation-config, waiting for one to appear.
 */
import path from 'node:path';
import { logEvent, type Logger } from '../log/logger.js';
import { type Clock, pollUntil } from '../ports/clock.js';
import type { Exec } from '../ports/exec.js';
import type { RootFs } from '../ports/fs.js';
import { MANIFEST_FILE } from './ibi/seed-reconfiguration.js';
import { SITE_CONFIG_NAMES } from './locate.js';

export const ETC_SITE_CONFIG = '/etc/sno-relocate/site-config.yaml';
export const CONFIG_LABELS = ['cluster-config', 'relocation-config'] as const;
/**
 * The only filesystem types mounted: what config media use (a USB stick's vfat, an ISO image's
 * iso9660, ext4). The stick is unauthenticated until its site-config is read, so no other kernel
 * filesystem parser is offered a crafted image.
 */
export const MOUNT_TYPES = ['vfat', 'iso9660', 'ext4'] as const;
/** where the agent mounts a labelled filesystem (and where one mounted there already is read) */
export const MOUNT_BASE = '/run/sno-relocate';

export interface Discovered {
  /** real path of the folder or file to load */
  path: string;
  /** unmounts the stick, if the agent mounted it; called as soon as the config is read */
  release(): Promise<void>;
}

export interface DiscoverOptions {
  fs: RootFs;
  exec: Exec;
  clock: Clock;
  log: Logger;
  /** the technician's console (the engine's banner) */
  banner: { show(line: string): Promise<void> };
  waitSeconds: number;
  /** ends the wait early (the unit being stopped); discovery then finds nothing */
  signal?: AbortSignal;
}

async function findIn(fs: RootFs, dir: string): Promise<string | undefined> {
  // a native site-config, or an image-based install's config media (cluster-configuration/manifest.json)
  for (const name of [...SITE_CONFIG_NAMES, MANIFEST_FILE])
    if (await fs.exists(path.posix.join(dir, name))) return fs.resolve(dir);
  return undefined;
}

/**
 * Looks on the filesystem labelled `label`. A stick with that label but no site-config is reported
 * once (`quiet` holds the labels already reported), not on every look of the wait.
 */
async function tryLabel(options: DiscoverOptions, label: string, quiet: Set<string>): Promise<Discovered | undefined> {
  const { fs, exec, log } = options;
  const level = quiet.has(label) ? 'debug' : 'info';
  const mountPoint = path.posix.join(MOUNT_BASE, label);
  const alreadyMounted = await findIn(fs, mountPoint);
  if (alreadyMounted) return { path: alreadyMounted, release: async () => undefined };
  const device = `/dev/disk/by-label/${label}`;
  if (!(await fs.exists(device))) return undefined;
  await fs.mkdirp(mountPoint, 0o700);
  // read-only and inert: nothing on a stick is executed, no device node or setuid bit is honoured
  await exec.run('mount', [
    '-t',
    MOUNT_TYPES.join(','),
    '-o',
    'ro,nosuid,nodev,noexec',
    fs.resolve(device),
    fs.resolve(mountPoint),
  ]);
  log[level]({ device, mountPoint }, `mounted ${device} read-only`);
  const release = async () => {
    await exec.run('umount', [fs.resolve(mountPoint)], { allowFailure: true });
    log[level]({ mountPoint }, `unmounted ${mountPoint}`);
  };
  const found = await findIn(fs, mountPoint);
  if (found) return { path: found, release };
  await release();
  if (!quiet.has(label))
    log.warn({ device }, `${device} holds no ${SITE_CONFIG_NAMES[0]} and no ${MANIFEST_FILE}; still waiting for one`);
  quiet.add(label);
  return undefined;
}

export async function discoverSiteConfig(options: DiscoverOptions): Promise<Discovered | undefined> {
  const { fs, clock, log, banner, waitSeconds, signal } = options;
  let announced = false;
  const quiet = new Set<string>();
  return pollUntil(
    clock,
    async () => {
      if (await fs.exists(ETC_SITE_CONFIG))
        return { path: fs.resolve(ETC_SITE_CONFIG), release: async () => undefined };
      for (const label of CONFIG_LABELS) {
        const found = await tryLabel(options, label, quiet);
        if (found) return found;
      }
      if (!announced && waitSeconds > 0) {
        announced = true;
        logEvent(
          log,
          'info',
          'configWaiting',
          { waitSeconds, labels: CONFIG_LABELS },
          `waiting up to ${waitSeconds}s for a site-config: ${ETC_SITE_CONFIG} or a filesystem labelled ${CONFIG_LABELS.join(' or ')}`,
        );
        await banner.show(`waiting for a site-config (a USB stick labelled ${CONFIG_LABELS.join(' or ')})`);
      }
      return undefined;
    },
    { timeoutMs: waitSeconds * 1000, intervalMs: 1000, maxIntervalMs: 2000, ...(signal && { signal }) },
  );
}
