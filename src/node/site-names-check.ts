/**
 * Whether the site's names work, for the health step: on the node they resolve to the internal
 * address (through the node's own nameservers, dnsmasq on a single-node dnsmasq node) and answer
 * there (the API on 6443, the router on 443 for the console and OAuth hosts, by a TLS handshake
 * naming the host whose certificate must verify against the site's CA bundle alone: served.ts);
 * at the site, its own DNS servers resolve them, else the site's clients cannot reach the cluster:
 * a warning naming the records to add, not a failure, since the node itself works.
 */
import { isIP, isIPv6 } from 'node:net';
import { canonicalIp, resolveFamily } from '../base/addresses.js';
import type { ClusterNames } from './dnsmasq.js';
import { servedProblem } from './served.js';

const TIMEOUT_MS = 3000;
const DEFAULT_PORTS = { api: 6443, router: 443 };

export interface NodeNamesInput {
  names: ClusterNames;
  /** the internal addresses the names resolve to on the node, one per family (A, AAAA) */
  addresses: string[];
  /** the node's nameservers (its /etc/resolv.conf) */
  nodeServers: string[];
  /** the site's CA bundle (PEM): the only anchors the served certificates are verified against */
  trust: string;
  ports?: { api: number; router: number };
  timeoutMs?: number;
}

/** An apps host every cluster serves through its router: the console's */
export const appsProbeHost = (names: ClusterNames) => `console-openshift-console.${names.apps}`;

/** The names a client at the site reaches the cluster by, each with its port: the API, the console, OAuth. */
export const servedNames = (names: ClusterNames, ports = DEFAULT_PORTS): [string, number][] => [
  [names.api, ports.api],
  [appsProbeHost(names), ports.router],
  [`oauth-openshift.${names.apps}`, ports.router],
];

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
  const ports = input.ports ?? DEFAULT_PORTS;
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
    for (const [host, port] of servedNames(names, ports)) {
      const reason = await servedProblem({ host, address, port }, input.trust, timeoutMs);
      if (reason) blocking.push(reason);
    }
  return blocking;
}

/**
 * On a node without the single-node dnsmasq configuration: each site name the node's nameservers
 * resolve, at each address it resolves to, serves a certificate that verifies against `trust`. A
 * name they do not resolve is not probed: the site's DNS check names the missing record.
 */
export async function checkServedNames(
  names: ClusterNames,
  nodeServers: string[],
  trust: string,
  { ports = DEFAULT_PORTS, timeoutMs = TIMEOUT_MS } = {},
): Promise<string[]> {
  const blocking: string[] = [];
  for (const [host, port] of servedNames(names, ports)) {
    const found = await Promise.all(([4, 6] as const).map((f) => resolveFamily(nodeServers, host, f, timeoutMs)));
    for (const address of found.flatMap((got) => (Array.isArray(got) ? got : []))) {
      const reason = await servedProblem({ host, address, port }, trust, timeoutMs);
      if (reason) blocking.push(reason);
    }
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
