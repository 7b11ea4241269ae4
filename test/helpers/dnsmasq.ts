/**
 * A real dnsmasq (Debian's dnsmasq-base) serving a folder of configuration files on a loopback
 * port, as the node's dnsmasq serves /etc/dnsmasq.d: what the site-names step writes is read by
 * dnsmasq itself, not by a parser of ours.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolveFamily } from '../../src/base/addresses.js';
import { freeUdpPort } from './ports.js';

export interface RunningDnsmasq {
  /** host:port to hand a resolver */
  server: string;
  /** A records of a name, or the resolver's error code (ENOTFOUND, EREFUSED, ...) */
  resolve4(name: string): Promise<string[] | string>;
  /** AAAA records of a name, or the resolver's error code */
  resolve6(name: string): Promise<string[] | string>;
  stop(): Promise<void>;
}

/**
 * Starts dnsmasq on 127.0.0.1 with exactly the files of `confDir`; resolves once it answers. With
 * `address` it listens there on port 53, as a nameserver a resolv.conf can name. A free UDP port
 * may be taken for TCP (dnsmasq binds both) by the time dnsmasq binds it: it tries another then.
 */
export async function startDnsmasq(confDir: string, address?: string): Promise<RunningDnsmasq> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnDnsmasq(confDir, address);
    } catch (e) {
      if (address || attempt === 5 || !(e as Error).message.includes('Address already in use')) throw e;
    }
  }
}

async function spawnDnsmasq(confDir: string, address?: string): Promise<RunningDnsmasq> {
  const port = address ? 53 : await freeUdpPort();
  const listen = address ?? '127.0.0.1';
  const child: ChildProcess = spawn(
    'dnsmasq',
    [
      '--keep-in-foreground',
      '--conf-file=/dev/null',
      `--conf-dir=${confDir}`,
      `--port=${port}`,
      `--listen-address=${listen}`,
      '--bind-interfaces',
      '--no-resolv',
      '--no-hosts',
      '--pid-file',
      '--log-facility=-',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // dnsmasq logs "started" once its sockets are bound
  await new Promise<void>((resolve, reject) => {
    const onData = () => {
      if (stderr.includes('started, version')) resolve();
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`dnsmasq exited (${code}): ${stderr}`)));
    child.once('error', reject);
  });
  const server = address ?? `127.0.0.1:${port}`;
  return {
    server,
    resolve4: (name) => resolveFamily([server], name, 4, 2000),
    resolve6: (name) => resolveFamily([server], name, 6, 2000),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
