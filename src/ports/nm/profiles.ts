/**
 * nmstate's desired state as NetworkManager connection profiles (a{sa{sv}} settings with the
 * variant types NetworkManager's D-Bus API wants), in activation order. Pure functions.
 *
 * The subset is what site-configs use: ethernet, linux-bridge with ports, vlan, bond, IPv4/IPv6
 * static, DHCP/autoconf or disabled, routes, DNS. OVS interfaces need nmstatectl (OVS is
 * configured through its own database, not through profiles alone), except that with
 * `brExAsLinuxBridge` an OVS br-ex is made as a Linux bridge (br-ex-bridge.ts). What the subset
 * leaves out is listed by dbus-limits.ts; how a saved profile is updated is profile-updates.ts.
 */
import { isIPv4 } from 'node:net';
import dbus from 'dbus-next';
import type { NmstateState } from '../../base/nmstate.js';
import { parseCidr } from '../../base/addresses.js';
import {
  BR_EX,
  BR_EX_AS_LINUX_BRIDGE_ENV,
  brExAsLinuxBridge,
  type BridgePorts,
  type TranslationOptions,
} from './br-ex-bridge.js';
import { type Interface, ipv4ToNetworkOrder, ipv6Bytes, type Route, type Settings } from './encoding.js';

const { Variant } = dbus;
type Variant = dbus.Variant;

const CONNECTION_TYPE: Record<string, string> = {
  ethernet: '802-3-ethernet',
  'linux-bridge': 'bridge',
  vlan: 'vlan',
  bond: 'bond',
  dummy: 'dummy',
};

export interface Profile {
  name: string;
  /** controllers are activated before their ports, at every level, and plain interfaces last */
  role: 'controller' | 'port' | 'plain';
  settings: Settings;
}

export interface ProfilePlan {
  profiles: Profile[];
  /** interfaces whose profiles go */
  absent: string[];
  /** interfaces to take down, profiles kept */
  down: string[];
}

export class UnsupportedStateError extends Error {}

const isDefault = (destination: string) => parseCidr(destination).prefix === 0;
const familyOf = (destination: string) => parseCidr(destination).family;
/** a route to keep: validation gives each one a destination */
type KeptRoute = Route & { destination: string };
const kept = (r: Route): r is KeptRoute => r.state !== 'absent' && !!r.destination;

type IpBlock = NonNullable<Interface['ipv4']>;

function ipSettings(
  family: 4 | 6,
  block: IpBlock | undefined,
  routes: KeptRoute[],
  dns: string[],
  search: string[],
  dnsPriority: number | undefined,
): Record<string, Variant> {
  const enabled = block?.enabled !== false && block !== undefined;
  if (!enabled) return { method: new Variant('s', 'disabled') };
  const dynamic = block.dhcp === true || block.autoconf === true;
  const addresses = block.address ?? [];
  const method = dynamic ? 'auto' : addresses.length ? 'manual' : 'disabled';
  const out: Record<string, Variant> = { method: new Variant('s', method) };
  if (method === 'disabled') return out;
  if (addresses.length) {
    out['address-data'] = new Variant(
      'aa{sv}',
      addresses.map((a) => ({ address: new Variant('s', a.ip), prefix: new Variant('u', a['prefix-length']) })),
    );
  }
  const gateway = routes.find((r) => isDefault(r.destination) && r['next-hop-address']);
  if (gateway && !dynamic) out.gateway = new Variant('s', gateway['next-hop-address']!);
  const others = routes.filter((r) => r !== gateway || dynamic);
  if (others.length) {
    out['route-data'] = new Variant(
      'aa{sv}',
      others.map((r) => {
        const cidr = parseCidr(r.destination);
        return {
          dest: new Variant('s', cidr.ip),
          prefix: new Variant('u', cidr.prefix),
          ...(r['next-hop-address'] ? { 'next-hop': new Variant('s', r['next-hop-address']) } : {}),
          ...(r.metric !== undefined ? { metric: new Variant('u', r.metric) } : {}),
        };
      }),
    );
  }
  if (dns.length) {
    out.dns =
      family === 4
        ? new Variant('au', dns.map(ipv4ToNetworkOrder))
        : new Variant(
            'aay',
            dns.map((d) => Buffer.from(ipv6Bytes(d))),
          );
    // the site's servers, not whatever a lease hands out
    if (dynamic) out['ignore-auto-dns'] = new Variant('b', true);
    if (dnsPriority !== undefined) out['dns-priority'] = new Variant('i', dnsPriority);
  }
  if (search.length) out['dns-search'] = new Variant('as', search);
  return out;
}

/**
 * The interfaces that carry the site's DNS servers, per address family (NetworkManager keeps them
 * in each profile's ipv4 and ipv6 settings): the one with the family's default route, else the
 * first with that family enabled. The search domains go with the IPv4 servers, else the IPv6 ones.
 */
function dnsCarriers(state: NmstateState, ports: Map<string, unknown>): { 4?: string; 6?: string } {
  const dns = state['dns-resolver']?.config;
  if (!dns) return {};
  const up = (state.interfaces ?? []).filter((i) => !ports.has(i.name) && (i.state ?? 'up') === 'up');
  const enabled = (i: Interface, family: 4 | 6) => {
    const block = family === 4 ? i.ipv4 : i.ipv6;
    return block !== undefined && block.enabled !== false;
  };
  const carrier = (family: 4 | 6): string | undefined => {
    const viaDefault = (state.routes?.config ?? [])
      .filter(kept)
      .find((r) => isDefault(r.destination) && familyOf(r.destination) === family && r['next-hop-interface'])?.[
      'next-hop-interface'
    ];
    const candidates = up.filter((i) => enabled(i, family));
    return candidates.find((i) => i.name === viaDefault)?.name ?? candidates[0]?.name;
  };
  const out: { 4?: string; 6?: string } = {};
  for (const family of [4, 6] as const) {
    const servers = (dns.server ?? []).filter((s) => isIPv4(s) === (family === 4));
    const searchHere = family === 4 || out[4] === undefined;
    if (servers.length === 0 && !(searchHere && dns.search?.length)) continue;
    const name = carrier(family);
    if (name) out[family] = name;
    else if (servers.length)
      throw new UnsupportedStateError(
        `dns-resolver.config.server: no interface in the site network has IPv${family} enabled to carry ${servers.join(', ')}`,
      );
  }
  return out;
}
/** NetworkManager's default DNS priority of a profile that is not a VPN (what 0 stands for) */
export const DEFAULT_DNS_PRIORITY = 100;

/**
 * DNS priorities that keep the site's server order: NetworkManager keeps IPv4 and IPv6 servers in
 * separate lists and puts IPv4 first unless the IPv6 list has the lower (stronger) priority. A
 * list that alternates between families cannot be kept, and is refused.
 */
function dnsPriorities(state: NmstateState): { 4?: number; 6?: number } {
  const servers = state['dns-resolver']?.config?.server ?? [];
  const families = servers.map((s) => (isIPv4(s) ? 4 : 6));
  const switches = families.filter((f, i) => i > 0 && f !== families[i - 1]).length;
  if (switches > 1)
    throw new UnsupportedStateError(
      `dns-resolver.config.server: ${servers.join(', ')} alternate between IPv4 and IPv6; NetworkManager keeps each family's servers together, so list them grouped`,
    );
  return families[0] === 6 && switches === 1 ? { 6: 40, 4: 50 } : {};
}

/** NetworkManager's connection type for an interface; refuses the types this backend does not make. */
export function connectionType(iface: Interface): string {
  const type = iface.type ?? 'ethernet';
  const known = CONNECTION_TYPE[type];
  if (known) return known;
  const ovs = type.startsWith('ovs-')
    ? ` (OVS needs nmstatectl${iface.name === BR_EX ? `, or ${BR_EX_AS_LINUX_BRIDGE_ENV}=1 to make br-ex a Linux bridge` : ''})`
    : '';
  throw new UnsupportedStateError(
    `interface ${iface.name}: type ${type} is not supported through NetworkManager's D-Bus API here${ovs}; supported: ${Object.keys(CONNECTION_TYPE).join(', ')}`,
  );
}

/** The profiles that make the desired state, in activation order. */
export function profilesFor(desired: NmstateState, options: TranslationOptions = {}): ProfilePlan {
  const state = options.brExAsLinuxBridge ? brExAsLinuxBridge(desired) : desired;
  const interfaces = state.interfaces ?? [];
  const ports = new Map<string, { controller: string; kind: 'bridge' | 'bond' }>();
  for (const iface of interfaces) {
    const bridgePorts = (iface as BridgePorts).bridge?.port ?? [];
    // an OVS bridge lists its own internal interface among its ports
    for (const p of bridgePorts)
      if (p.name !== iface.name) ports.set(p.name, { controller: iface.name, kind: 'bridge' });
    for (const p of iface['link-aggregation']?.port ?? []) ports.set(p, { controller: iface.name, kind: 'bond' });
  }
  const dnsConfig = state['dns-resolver']?.config;
  for (const iface of interfaces) if ((iface.state ?? 'up') === 'up') connectionType(iface);
  const carriers = dnsCarriers(state, ports);
  const dnsPriority = dnsPriorities(state);
  const plan: ProfilePlan = { profiles: [], absent: [], down: [] };
  for (const iface of interfaces) {
    const wanted = iface.state ?? 'up';
    if (wanted === 'ignore') continue;
    if (wanted === 'absent') {
      plan.absent.push(iface.name);
      continue;
    }
    if (wanted === 'down') {
      plan.down.push(iface.name);
      continue;
    }
    const type = iface.type ?? 'ethernet';
    const port = ports.get(iface.name);
    const connection: Record<string, Variant> = {
      id: new Variant('s', iface.name),
      type: new Variant('s', connectionType(iface)),
      'interface-name': new Variant('s', iface.name),
      autoconnect: new Variant('b', true),
      ...(port ? { master: new Variant('s', port.controller), 'slave-type': new Variant('s', port.kind) } : {}),
    };
    const settings: Settings = { connection };
    if (type === 'ethernet')
      settings['802-3-ethernet'] = iface.mtu !== undefined ? { mtu: new Variant('u', iface.mtu) } : {};
    if (type === 'linux-bridge') {
      const stp =
        (iface as { bridge?: { options?: { stp?: { enabled?: boolean } } } }).bridge?.options?.stp?.enabled ?? false;
      settings.bridge = { stp: new Variant('b', stp) };
    }
    if (type === 'vlan') {
      if (!iface.vlan)
        throw new UnsupportedStateError(`interface ${iface.name}: a vlan needs vlan.base-iface and vlan.id`);
      settings.vlan = { parent: new Variant('s', iface.vlan['base-iface']), id: new Variant('u', iface.vlan.id) };
    }
    if (type === 'bond') {
      const aggregation = iface['link-aggregation'] as { mode?: string; options?: Record<string, unknown> } | undefined;
      // NetworkManager takes every bond option as a string, as the kernel's sysfs files do
      const options = Object.fromEntries(Object.entries(aggregation?.options ?? {}).map(([k, v]) => [k, String(v)]));
      settings.bond = {
        options: new Variant('a{ss}', { ...options, mode: String(aggregation?.mode ?? 'active-backup') }),
      };
    }
    if (!port) {
      const routes = (state.routes?.config ?? []).filter(kept).filter((r) => r['next-hop-interface'] === iface.name);
      const servers = (family: 4 | 6) =>
        carriers[family] === iface.name ? (dnsConfig?.server ?? []).filter((s) => isIPv4(s) === (family === 4)) : [];
      const searchFamily = carriers[4] !== undefined ? 4 : 6;
      const search = (family: 4 | 6) =>
        family === searchFamily && carriers[family] === iface.name ? (dnsConfig?.search ?? []) : [];
      settings.ipv4 = ipSettings(
        4,
        iface.ipv4,
        routes.filter((r) => familyOf(r.destination) === 4),
        servers(4),
        search(4),
        dnsPriority[4],
      );
      settings.ipv6 = ipSettings(
        6,
        iface.ipv6,
        routes.filter((r) => familyOf(r.destination) === 6),
        servers(6),
        search(6),
        dnsPriority[6],
      );
    }
    const role = port
      ? 'port'
      : interfaces.some((i) => ports.get(i.name)?.controller === iface.name)
        ? 'controller'
        : 'plain';
    plan.profiles.push({ name: iface.name, role, settings });
  }
  // controllers before their ports, at every level (a bond in a bridge), VLAN parents early, the rest last
  const depth = (name: string, seen: readonly string[] = []): number => {
    const port = ports.get(name);
    if (!port) return 0;
    if (seen.includes(name))
      throw new UnsupportedStateError(
        `interface ${name}: its controllers form a loop (${[...seen, name].join(' -> ')})`,
      );
    return 1 + depth(port.controller, [...seen, name]);
  };
  const vlanParents = new Set(interfaces.flatMap((i) => (i.vlan ? [i.vlan['base-iface']] : [])));
  const rank = (p: Profile) =>
    p.role === 'plain' && !vlanParents.has(p.name) ? Number.MAX_SAFE_INTEGER : depth(p.name);
  plan.profiles.sort((a, b) => rank(a) - rank(b));
  return plan;
}
