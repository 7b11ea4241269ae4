/**
 * nmstate's desired state as NetworkManager connection profiles (a{sa{sv}} settings with the
 * variant types NetworkManager's D-Bus API wants), and NetworkManager's devices back as nmstate's
 * current state. Pure functions: the D-Bus side is in networkmanager.ts.
 *
 * The subset is what site-configs use: ethernet, linux-bridge with ports, vlan, bond, IPv4/IPv6
 * static, DHCP/autoconf or disabled, routes, DNS. OVS interfaces need nmstatectl (OVS is
 * configured through its own database, not through profiles alone), except that with
 * `brExAsLinuxBridge` an OVS br-ex (the ovs-bridge and its ovs-interface) is made as a Linux
 * bridge of that name with the OVS bridge's ports, for nodes without Open vSwitch.
 */
import { isIPv4 } from 'node:net';
import dbus from 'dbus-next';
import type { NmstateState } from '../config/v1/schema.js';
import { canonicalIp, parseCidr } from '../node/addresses.js';

const { Variant } = dbus;
type Variant = dbus.Variant;

export type Interface = NonNullable<NmstateState['interfaces']>[number];
export type Route = NonNullable<NonNullable<NmstateState['routes']>['config']>[number];
/** connection settings as NetworkManager takes them: section -> key -> variant */
export type Settings = Record<string, Record<string, Variant>>;
/** connection settings as NetworkManager hands them out, variants unwrapped */
export type PlainSettings = Record<string, Record<string, unknown>>;

const CONNECTION_TYPE: Record<string, string> = {
  ethernet: '802-3-ethernet',
  'linux-bridge': 'bridge',
  vlan: 'vlan',
  bond: 'bond',
  dummy: 'dummy',
};

/** NetworkManager device types (NMDeviceType) to nmstate interface types */
const DEVICE_TYPE: Record<number, string> = {
  1: 'ethernet',
  10: 'bond',
  11: 'vlan',
  13: 'linux-bridge',
  22: 'dummy',
  24: 'ovs-interface',
  26: 'ovs-bridge',
  32: 'loopback',
};
/** NM_DEVICE_STATE_ACTIVATED, and UNMANAGED which nmstate shows as ignore */
const ACTIVATED = 100;
const UNMANAGED = 10;

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

/** An IPv4 address as NetworkManager's `au` DNS entries hold it: the bytes in network order. */
export function ipv4ToNetworkOrder(ip: string): number {
  const [a, b, c, d] = ip.split('.').map(Number) as [number, number, number, number];
  return (a | (b << 8) | (c << 16) | (d << 24)) >>> 0;
}

export function networkOrderToIpv4(value: number): string {
  return [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, (value >>> 24) & 0xff].join('.');
}

function ipv6Bytes(ip: string): number[] {
  const [head = '', tail = ''] = canonicalIp(ip).split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const all = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return all.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]);
}

function bytesToIpv6(bytes: number[]): string {
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
  return canonicalIp(groups.join(':'));
}

const isDefault = (destination: string) => parseCidr(destination).prefix === 0;
const familyOf = (destination: string) => parseCidr(destination).family;

type IpBlock = NonNullable<Interface['ipv4']>;

function ipSettings(
  family: 4 | 6,
  block: IpBlock | undefined,
  routes: Route[],
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
    const viaDefault = (state.routes?.config ?? []).find(
      (r) => isDefault(r.destination) && familyOf(r.destination) === family && r['next-hop-interface'],
    )?.['next-hop-interface'];
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
const DEFAULT_DNS_PRIORITY = 100;

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

const BR_EX = 'br-ex';
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
      settings.bond = { options: new Variant('a{ss}', { ...options, mode: aggregation?.mode ?? 'active-backup' }) };
    }
    if (!port) {
      const routes = (state.routes?.config ?? []).filter(
        (r) => r['next-hop-interface'] === iface.name && (r as { state?: string }).state !== 'absent',
      );
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

/** Unwraps dbus-next variants, recursively, into plain values. */
export function plain(value: unknown): unknown {
  if (value instanceof Variant) return plain(value.value);
  if (Array.isArray(value)) return value.map(plain);
  if (Buffer.isBuffer(value)) return [...value];
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
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

export interface IpConfigData {
  addresses: { address: string; prefix: number }[];
  routes: { dest: string; prefix: number; nextHop?: string; metric?: number }[];
  gateway?: string;
}

export interface DeviceData {
  name: string;
  deviceType: number;
  state: number;
  hwAddress?: string;
  mtu?: number;
  ip4?: IpConfigData;
  ip6?: IpConfigData;
  /** the settings of the profile active on the device */
  applied?: PlainSettings;
}

type ShownIp = {
  enabled: boolean;
  dhcp?: boolean;
  autoconf?: boolean;
  address: { ip: string; 'prefix-length': number }[];
};

function shownIp(family: 4 | 6, data: IpConfigData | undefined, applied: PlainSettings | undefined): ShownIp {
  const method = applied?.[family === 4 ? 'ipv4' : 'ipv6']?.method as string | undefined;
  const address = (data?.addresses ?? []).map((a) => ({ ip: a.address, 'prefix-length': a.prefix }));
  const enabled = method ? !['disabled', 'ignore'].includes(method) : address.length > 0;
  return {
    enabled,
    ...(family === 4
      ? { dhcp: method === 'auto' }
      : { autoconf: method === 'auto', dhcp: method === 'auto' || method === 'dhcp' }),
    address,
  };
}

function configuredRoutes(name: string, applied: PlainSettings | undefined): Route[] {
  const out: Route[] = [];
  for (const [key, zero] of [
    ['ipv4', '0.0.0.0/0'],
    ['ipv6', '::/0'],
  ] as const) {
    const section = applied?.[key];
    const gateway = section?.gateway as string | undefined;
    if (gateway) out.push({ destination: zero, 'next-hop-address': gateway, 'next-hop-interface': name });
    for (const r of (section?.['route-data'] as
      { dest: string; prefix: number; 'next-hop'?: string; metric?: number }[] | undefined) ?? []) {
      out.push({
        destination: `${r.dest}/${r.prefix}`,
        ...(r['next-hop'] ? { 'next-hop-address': r['next-hop'] } : {}),
        'next-hop-interface': name,
        ...(r.metric !== undefined ? { metric: r.metric } : {}),
      });
    }
  }
  return out;
}

/** the DNS servers a profile configures, with the priority that orders them among all profiles' */
function configuredDns(applied: PlainSettings | undefined): {
  servers: { server: string; priority: number }[];
  search: string[];
} {
  const priority = (section: Record<string, unknown> | undefined) =>
    (section?.['dns-priority'] as number | undefined) || DEFAULT_DNS_PRIORITY;
  const v4 = ((applied?.ipv4?.dns as number[] | undefined) ?? []).map((n) => ({
    server: networkOrderToIpv4(n),
    priority: priority(applied?.ipv4),
  }));
  const v6 = ((applied?.ipv6?.dns as number[][] | undefined) ?? []).map((b) => ({
    server: bytesToIpv6(b),
    priority: priority(applied?.ipv6),
  }));
  return {
    servers: [...v4, ...v6],
    search: [
      ...((applied?.ipv4?.['dns-search'] as string[] | undefined) ?? []),
      ...((applied?.ipv6?.['dns-search'] as string[] | undefined) ?? []),
    ],
  };
}

/** NetworkManager's devices as nmstate's current state (interfaces, routes, dns-resolver). */
export function stateFromDevices(
  devices: readonly DeviceData[],
  runningDns: { server: string[]; search: string[] },
  options: TranslationOptions = {},
): NmstateState {
  const interfaces = devices.flatMap((d): Interface[] => {
    const type = DEVICE_TYPE[d.deviceType] ?? 'unknown';
    const state = d.state === ACTIVATED ? 'up' : d.state === UNMANAGED ? 'ignore' : 'down';
    const connection = d.applied?.connection;
    const iface: Interface & Record<string, unknown> = {
      name: d.name,
      type,
      state,
      ...(d.hwAddress ? { 'mac-address': d.hwAddress.toUpperCase() } : {}),
      ...(d.mtu ? { mtu: d.mtu } : {}),
      ipv4: shownIp(4, d.ip4, d.applied),
      ipv6: shownIp(6, d.ip6, d.applied),
    };
    if (connection?.master) iface.controller = connection.master as string;
    if (type === 'vlan' && d.applied?.vlan)
      iface.vlan = { 'base-iface': d.applied.vlan.parent as string, id: d.applied.vlan.id as number };
    const portsOf = (kind: string) =>
      devices
        .filter((p) => p.applied?.connection?.master === d.name && p.applied.connection['slave-type'] === kind)
        .map((p) => p.name);
    if (type === 'bond')
      iface['link-aggregation'] = {
        mode: (d.applied?.bond?.options as Record<string, string> | undefined)?.mode ?? 'balance-rr',
        port: portsOf('bond'),
      };
    if (type === 'linux-bridge') iface.bridge = { port: portsOf('bridge').map((name) => ({ name })) };
    if (type !== 'linux-bridge' || d.name !== BR_EX || !options.brExAsLinuxBridge) return [iface];
    // the bridge as a site-config for an OVS node names it: OVS shows br-ex as a bridge and as its internal interface
    const { bridge: _ports, ...ip } = iface;
    return [
      iface,
      { ...ip, type: 'ovs-interface' },
      {
        name: d.name,
        type: 'ovs-bridge',
        state,
        bridge: { port: [...portsOf('bridge'), BR_EX].map((name) => ({ name })) },
      } as Interface,
    ];
  });
  const running = devices.flatMap((d) =>
    [d.ip4, d.ip6].flatMap((ip) =>
      (ip?.routes ?? []).map((r) => ({
        destination: `${r.dest}/${r.prefix}`,
        ...(r.nextHop && !['0.0.0.0', '::'].includes(r.nextHop) ? { 'next-hop-address': r.nextHop } : {}),
        'next-hop-interface': d.name,
        ...(r.metric !== undefined ? { metric: r.metric } : {}),
      })),
    ),
  );
  const config = devices.flatMap((d) => configuredRoutes(d.name, d.applied));
  const dns = devices.map((d) => configuredDns(d.applied));
  // the order NetworkManager writes them in: by priority, then as the profiles list them
  const servers = dns.flatMap((d) => d.servers).sort((a, b) => a.priority - b.priority);
  const dnsConfig = { server: servers.map((s) => s.server), search: dns.flatMap((d) => d.search) };
  return {
    interfaces,
    routes: { config, running },
    'dns-resolver': { config: dnsConfig, running: runningDns },
  };
}
