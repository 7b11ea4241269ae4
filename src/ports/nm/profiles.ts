/**
 * nmstate's desired state as NetworkManager connection profiles (a{sa{sv}} settings with the
 * variant types NetworkManager's D-Bus API wants), in activation order; and how an existing profile
 * is updated into a desired one. Pure functions.
 *
 * The subset is what site-configs use: ethernet, linux-bridge with ports, vlan, bond, IPv4/IPv6
 * static, DHCP/autoconf or disabled, routes, DNS. OVS interfaces need nmstatectl (OVS is
 * configured through its own database, not through profiles alone), except that with
 * `brExAsLinuxBridge` an OVS br-ex (the ovs-bridge and its ovs-interface) is made as a Linux
 * bridge of that name with the OVS bridge's ports, for nodes without Open vSwitch.
 */
import { isIPv4 } from 'node:net';
import dbus from 'dbus-next';
import { type NmstateState, routeMatches } from '../../base/nmstate.js';
import { parseCidr } from '../../base/addresses.js';
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

/** the switch that sets TranslationOptions.brExAsLinuxBridge on a node */
export const BR_EX_AS_LINUX_BRIDGE_ENV = 'SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE';

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

export interface TranslationOptions {
  /** make an OVS br-ex a Linux bridge, and show a Linux bridge br-ex also as OVS (nodes without Open vSwitch) */
  brExAsLinuxBridge?: boolean;
}
export const BR_EX = 'br-ex';
type BridgePorts = { bridge?: { port?: { name: string }[] } };
const isOvs = (iface: Interface) => iface.type?.startsWith('ovs-') === true;

/**
 * The desired state with an OVS br-ex as a Linux bridge: the ovs-interface gives the IP settings,
 * the ovs-bridge its ports (without br-ex itself, OVS's internal port). A state that lists no OVS
 * bridge leaves the ports the bridge already has.
 */
export function brExAsLinuxBridge(state: NmstateState): NmstateState {
  const interfaces = state.interfaces ?? [];
  const ovs = interfaces.filter((i) => i.name === BR_EX && isOvs(i));
  if (ovs.length === 0) return state;
  const carrier = ovs.find((i) => i.type === 'ovs-interface') ?? ovs[0]!;
  const ovsBridge = ovs.find((i) => i.type === 'ovs-bridge') as BridgePorts | undefined;
  const ports = ovsBridge?.bridge?.port?.filter((p) => p.name !== BR_EX).map((p) => ({ name: p.name }));
  const { bridge: _ovsOptions, ...rest } = carrier as Interface & BridgePorts;
  const linux = {
    ...rest,
    type: 'linux-bridge',
    bridge: { options: { stp: { enabled: false } }, ...(ports ? { port: ports } : {}) },
  } as Interface;
  return { ...state, interfaces: interfaces.flatMap((i) => (i === ovs[0] ? [linux] : ovs.includes(i) ? [] : [i])) };
}

/** NetworkManager's connection type for an interface; refuses the types this backend does not make. */
function connectionType(iface: Interface): string {
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

/** The parts of an interface this backend turns into profile settings; nmstate knows many more. */
const INTERFACE_KEYS = new Set([
  'name',
  'type',
  'state',
  'mtu',
  'mac-address',
  'ipv4',
  'ipv6',
  'vlan',
  'link-aggregation',
  'bridge',
]);
const IP_KEYS = new Set(['enabled', 'dhcp', 'autoconf', 'address']);
/** what a route may say here: NetworkManager's route-data gets destination, next hop and metric */
const ROUTE_KEYS = new Set(['state', 'destination', 'next-hop-address', 'next-hop-interface', 'metric']);
const NEEDS_NMSTATECTL = 'needs nmstatectl';

/**
 * What the D-Bus fallback cannot apply of a desired state, one line per feature with its path:
 * interface types and settings it does not make (OVS, DPDK, SR-IOV, 802.1X, ...), route fields
 * beyond destination, next hop and metric, route rules, DNS options, Open vSwitch's database.
 */
export function unsupportedThroughDbus(desired: NmstateState, options: TranslationOptions = {}): string[] {
  const state = options.brExAsLinuxBridge ? brExAsLinuxBridge(desired) : desired;
  const out: string[] = [];
  for (const key of ['route-rules', 'ovs-db', 'ovn'] as const)
    if ((state as Record<string, unknown>)[key] !== undefined) out.push(`${key}: ${NEEDS_NMSTATECTL}`);
  if (state['dns-resolver']?.config?.options?.length) out.push(`dns-resolver.config.options: ${NEEDS_NMSTATECTL}`);
  (state.interfaces ?? []).forEach((iface, i) => {
    if ((iface.state ?? 'up') !== 'up') return;
    const at = `interfaces[${i}] (${iface.name})`;
    try {
      connectionType(iface);
    } catch (err) {
      if (!(err instanceof UnsupportedStateError)) throw err;
      out.push(`${at}.type: ${err.message}`);
      return;
    }
    for (const key of Object.keys(iface).filter((k) => !INTERFACE_KEYS.has(k)))
      out.push(`${at}.${key}: ${NEEDS_NMSTATECTL}`);
    for (const family of ['ipv4', 'ipv6'] as const)
      for (const key of Object.keys(iface[family] ?? {}).filter((k) => !IP_KEYS.has(k)))
        out.push(`${at}.${family}.${key}: ${NEEDS_NMSTATECTL}`);
  });
  (state.routes?.config ?? []).forEach((route, i) => {
    for (const key of Object.keys(route).filter((k) => !ROUTE_KEYS.has(k)))
      out.push(`routes.config[${i}].${key}: ${NEEDS_NMSTATECTL}`);
  });
  if (out.length) return out;
  // the translation's own refusals (a VLAN without its parent, DNS no interface can carry, ...)
  try {
    profilesFor(desired, options);
  } catch (err) {
    if (!(err instanceof UnsupportedStateError)) throw err;
    out.push(err.message);
  }
  return out;
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
/** a saved profile that stays, but is no longer brought up by NetworkManager on its own */
export function withoutAutoconnect(settings: Settings): Settings {
  return { ...settings, connection: { ...settings.connection, autoconnect: new Variant('b', false) } };
}

/** whether an existing profile can be updated into the desired one: a profile does not change type */
export const sameType = (existing: Settings, desired: Settings): boolean =>
  existing.connection?.type?.value === desired.connection?.type?.value;

/**
 * An existing profile updated to the desired settings. Keys the desired state sets replace theirs
 * and the rest stays (nmstate leaves what it is not told about: an MTU, a MAC binding), except
 * that the IP sections are replaced whole: NetworkManager hands out addresses, routes and DNS
 * twice (address-data and the older addresses, say), and a stale copy must not come back. The
 * profile's identity (id, uuid) is kept so that nothing else that names it breaks.
 */
export function mergeSettings(existing: Settings, desired: Settings): Settings {
  const merged: Settings = { ...existing };
  for (const [section, keys] of Object.entries(desired)) {
    merged[section] = section === 'ipv4' || section === 'ipv6' ? keys : { ...existing[section], ...keys };
  }
  const connection = merged.connection!;
  for (const keep of ['id', 'uuid'] as const)
    if (existing.connection?.[keep]) connection[keep] = existing.connection[keep];
  if (!desired.connection?.master) {
    delete connection.master;
    delete connection['slave-type'];
  } else {
    // a port carries no IP configuration of its own
    delete merged.ipv4;
    delete merged.ipv6;
  }
  return merged;
}

/** the routes the desired state removes (`state: absent`) */
export const absentRoutes = (state: NmstateState): Route[] =>
  (state.routes?.config ?? []).filter((r) => r.state === 'absent');

/**
 * A saved profile of interface `iface` without the routes that `absent` matches (nmstate's
 * matching: a field an absent route leaves out matches anything): its route-data entries and its
 * gateway, the default route. Undefined when none matches. NetworkManager hands a profile out with
 * the legacy `routes` and `addresses` beside `route-data` and `address-data`, and reads the legacy
 * ones first when a client sends both, so they are left out: a removed route would come back.
 */
export function withoutRoutes(settings: Settings, iface: string, absent: readonly Route[]): Settings | undefined {
  const matched = (r: Route) => absent.some((a) => routeMatches(a, r));
  let changed = false;
  const out: Settings = { ...settings };
  for (const [key, zero] of [
    ['ipv4', '0.0.0.0/0'],
    ['ipv6', '::/0'],
  ] as const) {
    const section = settings[key];
    if (!section) continue;
    const { routes: _legacyRoutes, addresses: _legacyAddresses, ...next } = section;
    const gateway = section.gateway?.value as string | undefined;
    if (gateway && matched({ destination: zero, 'next-hop-address': gateway, 'next-hop-interface': iface })) {
      delete next.gateway;
      changed = true;
    }
    const data = (section['route-data']?.value ?? []) as Record<string, Variant>[];
    const keep = data.filter(
      (r) =>
        !matched({
          destination: `${r.dest?.value as string}/${r.prefix?.value as number}`,
          ...(r['next-hop'] ? { 'next-hop-address': r['next-hop'].value as string } : {}),
          'next-hop-interface': iface,
          ...(r.metric ? { metric: r.metric.value as number } : {}),
        }),
    );
    if (keep.length !== data.length) {
      next['route-data'] = new Variant('aa{sv}', keep);
      changed = true;
    }
    out[key] = next;
  }
  return changed ? out : undefined;
}
