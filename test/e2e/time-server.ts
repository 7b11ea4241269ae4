/**
 * The test network's time server: chronyd on the host's loopback, -x (the host's clock is never
 * adjusted), serving the host's clock at stratum 8 (`local`), no command socket. A guest booted with
 * `uplinkToHost` reaches it at the gateway address (slirp forwards 192.0.2.1 to the host's
 * loopback), as a node reaches its site's or its factory's NTP server.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeUdpPort } from '../helpers/ports.js';
import type { DiskEntry } from './disk.js';
import { killAndWait, track } from './processes.js';
import { GATEWAY } from './sites.js';

export interface TimeServer {
  port: number;
  /** a chrony.conf line naming this server as the guest reaches it */
  serverLine: string;
  stop(): Promise<void>;
}

export async function startTimeServer(): Promise<TimeServer> {
  const dir = await mkdtemp(join(tmpdir(), 'sno-e2e-time-'));
  const port = await freeUdpPort();
  const conf = join(dir, 'server.conf');
  await writeFile(
    conf,
    [
      `port ${port}`,
      'bindaddress 127.0.0.1',
      'cmdport 0',
      'local stratum 8',
      'allow 127.0.0.1',
      `pidfile ${dir}/chronyd.pid`,
      '',
    ].join('\n'),
  );
  const child = track(
    spawn('chronyd', ['-x', '-d', '-u', 'root', '-f', conf], { stdio: ['ignore', 'ignore', 'inherit'] }),
  );
  return {
    port,
    serverLine: `server ${GATEWAY} port ${port} iburst`,
    async stop() {
      await killAndWait(child, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The factory's NTP source, in the node image: Debian's chrony.conf reads sources from
 * /etc/chrony/sources.d (its pool stays, unreachable here). chronyd, which chrony-wait.service
 * pulls in, then synchronises as the network comes up, as at a factory with NTP on its LAN. Every
 * boot of a scenario waits for that first sync before kubelet-dependencies.target, so the source
 * polls as often as a LAN allows (chrony.conf(5): iburst sends its first requests at most 2 s
 * apart, or at minpoll when shorter): `chronyd -Q` against this server takes about 4 s with
 * iburst alone and 0.4 s with minpoll -2; the emulated guest took 12 s from chronyd's start.
 */
export const factoryTimeSource = (server: TimeServer): DiskEntry => ({
  path: '/etc/chrony/sources.d/factory.sources',
  mode: 0o644,
  contents: `${server.serverLine} minpoll -2 maxpoll 2\n`,
});
