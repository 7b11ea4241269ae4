/**
 * The single-node dnsmasq configuration of OpenShift clusters installed by the assisted installer
 * (assisted-service internal/network/manifests_generator.go, MachineConfig
 * 50-master-dnsmasq-configuration): dnsmasq.service runs /usr/local/bin/dnsmasq_config.sh before it
 * starts, and that script rewrites /etc/dnsmasq.d/single-node.conf with the factory's names:
 *
 *   address=/apps.<cluster>.<base>/<host ip>
 *   address=/api-int.<cluster>.<base>/<host ip>
 *   address=/api.<cluster>.<base>/<host ip>
 *
 * The on-node kubeconfigs keep using those names, so that file stays as the factory left it and the
 * site's names go into a file of the agent's own beside it (dnsmasq reads every file of the folder).
 */
import { canonicalIp } from '../base/addresses.js';
import type { RootFs } from '../ports/fs.js';
import { KUBELET_NODE_IP_DROP_IN } from './internal-ip.js';

export const DNSMASQ_UNIT = 'dnsmasq.service';
/** written by the factory's dnsmasq_config.sh at every start of dnsmasq */
export const FACTORY_DNSMASQ_FILE = '/etc/dnsmasq.d/single-node.conf';
export const SITE_DNSMASQ_FILE = '/etc/dnsmasq.d/sno-relocate-site.conf';

/** The names of one cluster domain (<cluster>.<base>) that dnsmasq answers with the node's address. */
export interface ClusterNames {
  /** <cluster>.<base> */
  domain: string;
  api: string;
  apiInt: string;
  /** dnsmasq's address=/apps.<domain>/ answers the name and every name under it: *.apps */
  apps: string;
}

export function clusterNames(domain: string): ClusterNames {
  return { domain, api: `api.${domain}`, apiInt: `api-int.${domain}`, apps: `apps.${domain}` };
}

/** The cluster domain and address the factory's file names, from its `address=/api.<domain>/<ip>` line. */
export function parseFactoryNames(text: string): { domain: string; address: string } | undefined {
  for (const line of text.split('\n')) {
    const match = /^address=\/api\.([^/]+)\/([^/\s]+)\s*$/.exec(line.trim());
    if (match) return { domain: match[1]!, address: match[2]! };
  }
  return undefined;
}

/** The factory's names; `absent` on a node without the single-node dnsmasq configuration. */
export async function readFactoryNames(
  fs: RootFs,
): Promise<{ domain: string; address: string } | 'absent' | undefined> {
  const text = await fs.readText(FACTORY_DNSMASQ_FILE);
  return text === undefined ? 'absent' : parseFactoryNames(text);
}

/**
 * The agent's file: the site's api, api-int and *.apps names for the node's internal addresses.
 * Dual-stack, each name gets one line per family: dnsmasq answers A from the IPv4 line and AAAA
 * from the IPv6 one.
 */
export function renderSiteNames(names: ClusterNames, addresses: string | readonly string[]): string {
  const all = typeof addresses === 'string' ? [addresses] : addresses;
  const lines = [names.apps, names.apiInt, names.api].flatMap((name) => all.map((a) => `address=/${name}/${a}\n`));
  return `# Installed by sno-relocate: the site's names for this node's internal IP. The factory's names stay
# in single-node.conf, which the on-node kubeconfigs use.
${lines.join('')}`;
}

/**
 * The internal addresses kubelet is pinned to on the host (the factory MachineConfig's drop-in),
 * the primary family's first: KUBELET_NODE_IPS, else KUBELET_NODE_IP; empty without one.
 */
export async function pinnedNodeAddresses(fs: RootFs): Promise<string[]> {
  const text = (await fs.readText(KUBELET_NODE_IP_DROP_IN)) ?? '';
  const match = /KUBELET_NODE_IPS=([0-9A-Fa-f.:,]+)/.exec(text) ?? /KUBELET_NODE_IP=([0-9A-Fa-f.:]+)/.exec(text);
  return match ? match[1]!.split(',').filter(Boolean).map(canonicalIp) : [];
}
