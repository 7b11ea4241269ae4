/**
 * IP addresses and CIDRs as text: canonical forms for comparing what nmstate or `ip` report with
 * what a site-config says.
 */
import { promises as dns } from 'node:dns';
import { BlockList, isIPv4, isIPv6 } from 'node:net';

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

/** An address as the host of a URL or an address:port: an IPv6 literal in brackets (RFC 3986). */
export const urlHost = (host: string): string => (isIPv6(host) ? `[${canonicalIp(host)}]` : host);

/** address:port, with an IPv6 address in brackets */
export const hostPort = (host: string, port: number): string => `${urlHost(host)}:${port}`;

export const formatCidr = (c: Cidr): string => `${c.ip}/${c.prefix}`;

/** The network address of a CIDR (its host bits cleared), in canonical text: 10.42.0.0 for 10.42.0.20/24. */
export function networkAddress(cidr: string): string {
  const { ip, prefix, family } = parseCidr(cidr);
  const bits = family === 4 ? 32 : 128;
  const groups = family === 4 ? ip.split('.').map(Number) : expandIpv6(ip);
  const width = bits / groups.length;
  const masked = groups.map((value, i) => {
    const keep = Math.min(width, Math.max(0, prefix - i * width));
    return keep === 0 ? 0 : value & (((1 << width) - 1) ^ ((1 << (width - keep)) - 1));
  });
  return family === 4 ? masked.join('.') : canonicalIp(masked.map((g) => g.toString(16)).join(':'));
}

/** Whether an address lies in a subnet (CIDR; its host bits are ignored). False across families. */
export function subnetContains(subnet: string, ip: string): boolean {
  const net = parseCidr(subnet);
  const family = net.family === 4 ? 'ipv4' : 'ipv6';
  const block = new BlockList();
  block.addSubnet(net.ip, net.prefix, family);
  return block.check(ip, family);
}

/** The eight 16-bit groups of an IPv6 address. */
function expandIpv6(ip: string): number[] {
  const [head, tail = ''] = ip.split('::') as [string, string?];
  const part = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const front = part(head);
  const back = ip.includes('::') ? part(tail) : [];
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** fe80::/10: the kernel adds these by itself, so they never count as configuration */
export const isLinkLocal = (ip: string): boolean => isIPv6(ip) && /^fe[89ab]/i.test(canonicalIp(ip));

export function isCidr(value: string, family: 4 | 6 | 'any' = 'any'): boolean {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(value);
  if (!m?.[1] || !m[2]) return false;
  const bits = Number(m[2]);
  if (isIPv4(m[1])) return family !== 6 && bits <= 32;
  if (isIPv6(m[1])) return family !== 4 && bits <= 128;
  return false;
}

/** A (family 4) or AAAA (6) records of a name from these servers, or the resolver's error code (ENOTFOUND, ...) */
export async function resolveFamily(
  servers: string[],
  name: string,
  family: 4 | 6,
  timeoutMs: number,
): Promise<string[] | string> {
  const resolver = new dns.Resolver({ timeout: timeoutMs, tries: 1 });
  resolver.setServers(servers);
  try {
    return (await (family === 4 ? resolver.resolve4(name) : resolver.resolve6(name))).map(canonicalIp);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? String(err);
  }
}
