/**
 * Which of the site's names the node's single-node dnsmasq configuration should resolve, and to
 * which address: what the site-names step writes and the health step checks on the node.
 */
import { parseCidr } from '../base/addresses.js';
import { internalIPs } from '../config/site.js';
import type { ManagedFile } from './managed-file.js';
import type { RootFs } from '../ports/fs.js';
import {
  type ClusterNames,
  clusterNames,
  FACTORY_DNSMASQ_FILE,
  pinnedNodeAddresses,
  readFactoryNames,
  renderSiteNames,
  SITE_DNSMASQ_FILE,
} from './dnsmasq.js';

/** What the node holds: the factory's names (absent: no such configuration) and the pinned address. */
export interface NodeNames {
  factory: { domain: string; address: string } | 'absent' | undefined;
  /** the addresses the kubelet node-IP drop-in pins (primary first), for a site-config without an internal IP */
  pinned: string[];
}

export interface SiteNamesSite {
  clusterName?: string;
  baseDomain: string;
  network: { internalIP?: string; secondaryInternalIP?: string };
}

export type WantedNames =
  | { kind: 'none'; reason: string }
  | { kind: 'conflict'; reason: string }
  /** file undefined: the factory's file already names the site's domain, so the agent's must go */
  /** addresses: one per family, the primary family's first */
  | { kind: 'names'; file?: ManagedFile; summary: string; names: ClusterNames; addresses: string[] };

export async function readNodeNames(fs: RootFs): Promise<NodeNames> {
  return { factory: await readFactoryNames(fs), pinned: await pinnedNodeAddresses(fs) };
}

/** The cluster domain of the site, and the address its names should resolve to. */
export function wantedNames(node: NodeNames, site: SiteNamesSite): WantedNames {
  const { factory } = node;
  if (factory === 'absent')
    return { kind: 'none', reason: `no ${FACTORY_DNSMASQ_FILE}: the node has no single-node dnsmasq configuration` };
  if (factory === undefined)
    return { kind: 'none', reason: `${FACTORY_DNSMASQ_FILE} names no api host: there is no cluster domain to follow` };
  const factoryCluster = factory.domain.split('.')[0]!;
  const cluster = site.clusterName ?? factoryCluster;
  if (cluster !== factoryCluster)
    return {
      kind: 'conflict',
      reason: `spec.clusterName is ${cluster}, but ${FACTORY_DNSMASQ_FILE} names the cluster ${factoryCluster}: renaming the cluster is not supported`,
    };
  const internal = internalIPs(site.network);
  const addresses = internal.length === 0 ? node.pinned : internal.map((ip) => parseCidr(ip).ip);
  if (addresses.length === 0)
    return {
      kind: 'none',
      reason: 'the node has no internal IP (neither the site-config nor the kubelet node-IP drop-in sets one)',
    };
  const names = clusterNames(`${cluster}.${site.baseDomain}`);
  const summary = `${names.api}, ${names.apiInt} and *.${names.apps} to ${addresses.join(' and ')}`;
  if (names.domain === factory.domain && addresses.length === 1 && factory.address === addresses[0])
    return { kind: 'names', summary, names, addresses };
  // root-owned and world-readable, as dnsmasq's own configuration files
  return {
    kind: 'names',
    summary,
    names,
    addresses,
    file: { path: SITE_DNSMASQ_FILE, content: renderSiteNames(names, addresses), mode: 0o644, uid: 0, gid: 0 },
  };
}

/** The site's names on a node with the single-node dnsmasq configuration, and their address. */
export async function siteNamesOnNode(
  fs: RootFs,
  site: SiteNamesSite,
): Promise<{ names: ClusterNames; addresses: string[] } | undefined> {
  const want = wantedNames(await readNodeNames(fs), site);
  return want.kind === 'names' ? { names: want.names, addresses: want.addresses } : undefined;
}
