/**
 * Which of the site's names the node's single-node dnsmasq configuration should resolve, and to
 * which address: what the site-names step writes and the health step checks on the node.
 */
import { parseCidr } from '../base/addresses.js';
import type { ManagedFile } from './managed-file.js';
import type { RootFs } from '../ports/fs.js';
import {
  type ClusterNames,
  clusterNames,
  FACTORY_DNSMASQ_FILE,
  pinnedNodeAddress,
  readFactoryNames,
  renderSiteNames,
  SITE_DNSMASQ_FILE,
} from './dnsmasq.js';

/** What the node holds: the factory's names (absent: no such configuration) and the pinned address. */
export interface NodeNames {
  factory: { domain: string; address: string } | 'absent' | undefined;
  /** the address the kubelet node-IP drop-in pins, for a site-config without an internal IP */
  pinned?: string;
}

export interface SiteNamesSite {
  clusterName?: string;
  baseDomain: string;
  network: { internalIP?: string };
}

export type WantedNames =
  | { kind: 'none'; reason: string }
  | { kind: 'conflict'; reason: string }
  /** file undefined: the factory's file already names the site's domain, so the agent's must go */
  | { kind: 'names'; file?: ManagedFile; summary: string; names: ClusterNames; address: string };

export async function readNodeNames(fs: RootFs): Promise<NodeNames> {
  const pinned = await pinnedNodeAddress(fs);
  return { factory: await readFactoryNames(fs), ...(pinned !== undefined && { pinned }) };
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
  const internal = site.network.internalIP;
  const address = internal === undefined ? node.pinned : parseCidr(internal).ip;
  if (address === undefined)
    return {
      kind: 'none',
      reason: 'the node has no internal IP (neither the site-config nor the kubelet node-IP drop-in sets one)',
    };
  const names = clusterNames(`${cluster}.${site.baseDomain}`);
  const summary = `${names.api}, ${names.apiInt} and *.${names.apps} to ${address}`;
  if (names.domain === factory.domain && factory.address === address) return { kind: 'names', summary, names, address };
  // root-owned and world-readable, as dnsmasq's own configuration files
  return {
    kind: 'names',
    summary,
    names,
    address,
    file: { path: SITE_DNSMASQ_FILE, content: renderSiteNames(names, address), mode: 0o644, uid: 0, gid: 0 },
  };
}

/** The site's names on a node with the single-node dnsmasq configuration, and their address. */
export async function siteNamesOnNode(
  fs: RootFs,
  site: SiteNamesSite,
): Promise<{ names: ClusterNames; address: string } | undefined> {
  const want = wantedNames(await readNodeNames(fs), site);
  return want.kind === 'names' ? { names: want.names, address: want.address } : undefined;
}
