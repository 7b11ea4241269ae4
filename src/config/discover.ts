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
import { SITE_CONFIG_NAMES } from './load.js';

export const ETC_SITE_CONFIG = '/etc/sno-relocate/site-config.yaml';
export const CONFIG_LABELS = ['cluster-config', 'relocation-config'] as const;
/** where a labelled filesystem is mounted: by the agent, or by the sno-relocate-config .mount units */
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
  waitSeconds: number;
}

async function findIn(fs: RootFs, dir: string): Promise<string | undefined> {
  for (const name of SITE_CONFIG_NAMES) if (await fs.exists(path.posix.join(dir, name))) return fs.resolve(dir);
  return undefined;
}

async function tryLabel(options: DiscoverOptions, label: string): Promise<Discovered | undefined> {
  const { fs, exec, log } = options;
  const mountPoint = path.posix.join(MOUNT_BASE, label);
  const alreadyMounted = await findIn(fs, mountPoint);
  if (alreadyMounted) return { path: alreadyMounted, release: async () => undefined };
  const device = `/dev/disk/by-label/${label}`;
  if (!(await fs.exists(device))) return undefined;
  await fs.mkdirp(mountPoint, 0o700);
  // read-only and inert: nothing on a stick is executed, no device node or setuid bit is honoured
  await exec.run('mount', ['-o', 'ro,nosuid,nodev,noexec', fs.resolve(device), fs.resolve(mountPoint)]);
  log.info({ device, mountPoint }, `mounted ${device} read-only`);
  const release = async () => {
    await exec.run('umount', [fs.resolve(mountPoint)], { allowFailure: true });
    log.info({ mountPoint }, `unmounted ${mountPoint}`);
  };
  const found = await findIn(fs, mountPoint);
  if (found) return { path: found, release };
  await release();
  log.warn({ device }, `${device} holds no ${SITE_CONFIG_NAMES[0]}`);
  return undefined;
}

export async function discoverSiteConfig(options: DiscoverOptions): Promise<Discovered | undefined> {
  const { fs, clock, log, waitSeconds } = options;
  let announced = false;
  return pollUntil(
    clock,
    async () => {
      if (await fs.exists(ETC_SITE_CONFIG)) return { path: fs.resolve(ETC_SITE_CONFIG), release: async () => undefined };
      for (const label of CONFIG_LABELS) {
        const found = await tryLabel(options, label);
        if (found) return found;
      }
      if (!announced && waitSeconds > 0) {
        announced = true;
        logEvent(log, 'info', 'configWaiting', { waitSeconds, labels: CONFIG_LABELS }, `waiting up to ${waitSeconds}s for a site-config: ${ETC_SITE_CONFIG} or a filesystem labelled ${CONFIG_LABELS.join(' or ')}`);
      }
      return undefined;
    },
    { timeoutMs: waitSeconds * 1000, intervalMs: 1000, maxIntervalMs: 2000 },
  );
}
