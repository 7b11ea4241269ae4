/**
 * IP addresses: canonical text for comparing what nmstate or `ip` report with what a site-config
 * says, and the live addresses of an interface read and set with iproute2's `ip`.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { CommandError } from '../engine/errors.js';
import type { Exec } from '../ports/exec.js';

export interface Cidr {
  ip: string;
  prefix: number;
  family: 4 | 6;
}

/** Canonical text of an IP address (IPv6 compressed and lower-case), as the WHATWG URL parser writes it. */
export function canonicalIp(ip: string): string {
  if (isIPv6(ip)) return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  return ip;
}

export function parseCidr(text: string): Cidr {
  const slash = text.lastIndexOf('/');
  const ip = slash < 0 ? text : text.slice(0, slash);
  const family = isIPv4(ip) ? 4 : isIPv6(ip) ? 6 : undefined;
  const prefix = slash < 0 ? (family === 6 ? 128 : 32) : Number(text.slice(slash + 1));
  if (family === undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128))
    throw new Error(`not an IP address with prefix length: ${text}`);
  return { ip: canonicalIp(ip), prefix, family };
}

export const formatCidr = (c: Cidr): string => `${c.ip}/${c.prefix}`;

/** fe80::/10: the kernel adds these by itself, so they never count as configuration */
export const isLinkLocal = (ip: string): boolean => isIPv6(ip) && /^fe[89ab]/i.test(canonicalIp(ip));

interface IpAddrJson {
  addr_info?: { local?: string; prefixlen?: number }[];
}

/** The addresses on an interface as canonical CIDRs, or undefined when the interface does not exist. */
export async function interfaceAddresses(exec: Exec, dev: string): Promise<string[] | undefined> {
  const result = await exec.run('ip', ['-j', 'addr', 'show', 'dev', dev], { allowFailure: true });
  if (result.code !== 0) {
    if (/does not exist|Cannot find device/i.test(result.stderr)) return undefined;
    throw new CommandError(
      `ip addr show dev ${dev} failed (exit ${result.code}): ${result.stderr.trim()}`,
      `ip -j addr show dev ${dev}`,
      result.code,
      result.stderr,
      { retryable: true },
    );
  }
  const links = JSON.parse(result.stdout || '[]') as IpAddrJson[];
  return links.flatMap((link) =>
    (link.addr_info ?? []).flatMap((a) =>
      a.local !== undefined && a.prefixlen !== undefined ? [formatCidr(parseCidr(`${a.local}/${a.prefixlen}`))] : [],
    ),
  );
}

/** `ip addr replace`: adds the address, and succeeds when it is already there. */
export async function ensureAddress(exec: Exec, cidr: string, dev: string): Promise<void> {
  const c = parseCidr(cidr);
  // no duplicate address detection: kubelet binds to it at once and a tentative address refuses that
  await exec.run('ip', [
    `-${c.family}`,
    'addr',
    'replace',
    formatCidr(c),
    'dev',
    dev,
    ...(c.family === 6 ? ['nodad'] : []),
  ]);
}
