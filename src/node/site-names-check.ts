/**
 * Whether the site's names work, for the health step: on the node they resolve to the internal
 * address (through the node's own nameservers, dnsmasq on a single-node dnsmasq node) and answer
 * there (the API on 6443, the router on 443 for an apps host, by a TLS handshake naming the host);
 * at the site, its own DNS servers resolve them, else the site's clients cannot reach the cluster:
 * a warning naming the records to add, not a failure, since the node itself works.
 */
import { isIP, isIPv6 } from 'node:net';
import { canonicalIp, hostPort, resolveFamily } from '../base/addresses.js';
import tls from 'node:tls';
import type { ClusterNames } from './dnsmasq.js';

const TIMEOUT_MS = 3000;

export interface NodeNamesInput {
  names: ClusterNames;
  /** the internal addresses the names resolve to on the node, one per family (A, AAAA) */
  addresses: string[];
  /** the node's nameservers (its /etc/resolv.conf) */
  nodeServers: string[];
  ports?: { api: number; router: number };
  timeoutMs?: number;
}

/** An apps host every cluster serves through its router: the console's */
export const appsProbeHost = (names: ClusterNames) => `console-openshift-console.${names.apps}`;

/** Completes a TLS handshake with `host` named (SNI) at address:port; the reason when it cannot. */
function handshake(address: string, port: number, host: string, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    // the certificate is the domain step's business and checked there; this asks only whether
    // something serves the name
    const socket = tls.connect({ host: address, port, servername: host, rejectUnauthorized: false });
    const done = (reason: string | undefined) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs} ms`));
    socket.once('secureConnect', () => done(undefined));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}

/** `nameserver` lines of a resolv.conf */
export function nameservers(resolvConf: string | undefined): string[] {
  return (resolvConf ?? '')
    .split('\n')
    .map((l) => /^\s*nameserver\s+(\S+)/.exec(l)?.[1])
    .filter((s): s is string => s !== undefined && isIP(s.replace(/%.*$/, '')) !== 0);
}

/** What keeps the site's names from working on the node; empty when they resolve and answer. */
export async function checkNodeNames(input: NodeNamesInput): Promise<string[]> {
  const { names, addresses } = input;
  const ports = input.ports ?? { api: 6443, router: 443 };
  const timeoutMs = input.timeoutMs ?? TIMEOUT_MS;
  const blocking: string[] = [];
  const apps = appsProbeHost(names);
  if (input.nodeServers.length === 0) blocking.push('the node has no nameserver to resolve the site names with');
  else
    for (const address of addresses) {
      const family = isIPv6(address) ? 6 : 4;
      for (const name of [names.api, names.apiInt, apps]) {
        const got = await resolveFamily(input.nodeServers, name, family, timeoutMs);
        if (!(Array.isArray(got) && got.includes(canonicalIp(address))))
          blocking.push(
            `${name}: does not resolve to ${address} on the node (${Array.isArray(got) ? got.join(', ') || 'no address' : got})`,
          );
      }
    }
  for (const address of addresses)
    for (const [host, port] of [
      [names.api, ports.api],
      [apps, ports.router],
    ] as const) {
      const reason = await handshake(address, port, host, timeoutMs);
      if (reason) blocking.push(`${host}: nothing answers on ${hostPort(address, port)} (${reason})`);
    }
  return blocking;
}

/** A warning naming the records the site's DNS servers lack, or undefined when they have them. */
export async function checkSiteDns(
  names: ClusterNames,
  siteServers: string[],
  timeoutMs = TIMEOUT_MS,
): Promise<string | undefined> {
  if (siteServers.length === 0) return undefined;
  const missing: string[] = [];
  for (const [name, record] of [
    [names.api, names.api],
    [appsProbeHost(names), `*.${names.apps}`],
  ] as const) {
    // an IPv6-only site has AAAA records only: either family will do
    const found = await Promise.all(([4, 6] as const).map((f) => resolveFamily(siteServers, name, f, timeoutMs)));
    if (!found.some((got) => Array.isArray(got) && got.length > 0)) missing.push(record);
  }
  if (missing.length === 0) return undefined;
  return `the site's DNS (${siteServers.join(', ')}) does not resolve ${missing.join(' and ')}: add ${missing.length === 1 ? 'an A record' : 'A records'} for ${missing.join(' and ')} pointing at the node's site address, or clients at the site cannot reach the cluster`;
}
