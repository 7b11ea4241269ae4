/**
 * Cross-field checks of the site network: the internal IP against the site's subnets and families,
 * the interfaces the nmstate state names, the machine networks. They need the nmstate state, which
 * may come from a file, so they run once the files are read.
 */
import { isIPv4 } from 'node:net';
import { subnetContains } from '../../base/addresses.js';
import type { Finding } from '../../base/findings.js';
import { internalIpList } from '../normalise.js';
import { error, type Rule, warning } from './rules.js';
import type { SiteConfigV1 } from './schema.js';

const familyOf = (cidr: string): 'ipv4' | 'ipv6' => (isIPv4(cidr.split('/')[0]!) ? 'ipv4' : 'ipv6');

/** `$.spec.network.internalIP`, or its element i where the site-config gives a list */
const internalIpPath = (config: SiteConfigV1, i: number) =>
  Array.isArray(config.spec.network.internalIP) ? `$.spec.network.internalIP[${i}]` : '$.spec.network.internalIP';

export const internalIpOutsideSiteSubnets: Rule = {
  name: 'internal-ip-outside-site-subnets',
  check: ({ config, nmstate, nmstatePath }) => {
    if (!nmstate) return [];
    return internalIpList(config.spec.network.internalIP).flatMap((internal, k) => {
      const [internalAddr] = internal.split('/') as [string];
      const family = familyOf(internal);
      return (nmstate.interfaces ?? []).flatMap((iface, i) =>
        (iface[family]?.address ?? []).flatMap((addr, j) => {
          const site = `${addr.ip}/${addr['prefix-length']}`;
          return subnetContains(site, internalAddr) || subnetContains(internal, addr.ip)
            ? [
                error(
                  `${nmstatePath}.interfaces[${i}].${family}.address[${j}]`,
                  `site subnet ${site} overlaps the internal IP ${internal} (${internalIpPath(config, k)})`,
                ),
              ]
            : [];
        }),
      );
    });
  },
};

/**
 * Dual-stack: one internal IP per family, and the machine networks in the same family order (the
 * cluster's primary family first: the plan compares it with the cluster's Network config).
 */
export const internalIpFamilies: Rule = {
  name: 'internal-ip-families',
  check: ({ config }) => {
    const internals = internalIpList(config.spec.network.internalIP);
    const out: Finding[] = [];
    if (internals.length === 2 && familyOf(internals[0]!) === familyOf(internals[1]!))
      out.push(error('$.spec.network.internalIP[1]', `a second ${familyOf(internals[0]!)} address: one per IP family`));
    const networks = config.spec.network.machineNetworks ?? [];
    if (internals.length === 2 && networks.length === 2 && familyOf(networks[0]!) !== familyOf(internals[0]!))
      out.push(
        error(
          '$.spec.network.machineNetworks',
          `in the order ${networks.map(familyOf).join(', ')}, but internalIP in the order ${internals.map(familyOf).join(', ')}: both list the primary family first`,
        ),
      );
    return out;
  },
};

export const interfaceReferencesKnown: Rule = {
  name: 'interface-references-known',
  check: ({ nmstate, nmstatePath }) => {
    if (!nmstate) return [];
    const names = new Set((nmstate.interfaces ?? []).map((i) => i.name));
    const out: Finding[] = [];
    (nmstate.interfaces ?? []).forEach((iface, i) => {
      const base = iface.vlan?.['base-iface'];
      if (base !== undefined && !names.has(base))
        out.push(
          warning(
            `${nmstatePath}.interfaces[${i}].vlan.base-iface`,
            `${base} is not declared here; it must already exist on the node`,
          ),
        );
    });
    (nmstate.routes?.config ?? []).forEach((route, i) => {
      const dev = route['next-hop-interface'];
      if (dev !== undefined && !names.has(dev))
        out.push(
          warning(
            `${nmstatePath}.routes.config[${i}].next-hop-interface`,
            `${dev} is not declared here; it must already exist on the node`,
          ),
        );
    });
    return out;
  },
};

/**
 * The hint picks the site's address for nodeip-configuration; the internal IP stays the node IP
 * (the internal-ip step's drop-ins override what nodeip-configuration writes). So each machine
 * network is a site network: one per family, never the internal IP's, and, where the site network
 * of that family is static, one holding one of its addresses.
 */
export const machineNetworksAreSiteNetworks: Rule = {
  name: 'machine-networks-are-site-networks',
  check: ({ config, nmstate }) => {
    const networks = config.spec.network.machineNetworks ?? [];
    const internals = internalIpList(config.spec.network.internalIP);
    const out: Finding[] = [];
    const seen = new Map<string, number>();
    networks.forEach((cidr, i) => {
      const at = `$.spec.network.machineNetworks[${i}]`;
      const family = familyOf(cidr);
      const first = seen.get(family);
      if (first !== undefined)
        out.push(error(at, `a second ${family} network (after machineNetworks[${first}]): one per IP family`));
      seen.set(family, first ?? i);
      for (const internal of internals.filter((ip) => familyOf(ip) === family)) {
        const internalAddr = internal.split('/')[0]!;
        if (subnetContains(cidr, internalAddr) || subnetContains(internal, cidr.split('/')[0]!))
          out.push(
            error(
              at,
              `overlaps the internal IP ${internal} ($.spec.network.internalIP): the hint must pick the site's address, the internal IP is pinned apart from it`,
            ),
          );
      }
      const ifaces = nmstate?.interfaces ?? [];
      const dynamic = ifaces.some((iface) => {
        const ip = iface[family] as { dhcp?: boolean; autoconf?: boolean } | undefined;
        return ip?.dhcp === true || ip?.autoconf === true;
      });
      const statics = ifaces.flatMap((iface) => iface[family]?.address ?? []);
      if (!dynamic && statics.length > 0 && !statics.some((a) => subnetContains(cidr, a.ip)))
        out.push(
          error(
            at,
            `holds none of the site's static ${family} addresses (${statics.map((a) => `${a.ip}/${a['prefix-length']}`).join(', ')}): nodeip-configuration would find no address in it`,
          ),
        );
    });
    return out;
  },
};

/** Rules that also need the nmstate state, which may come from a file. */
export const networkRules: readonly Rule[] = [
  internalIpOutsideSiteSubnets,
  internalIpFamilies,
  interfaceReferencesKnown,
  machineNetworksAreSiteNetworks,
];
