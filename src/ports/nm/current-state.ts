/**
 * NetworkManager's devices, with their IP configuration and applied profiles, as nmstate's current
 * state (interfaces, routes, dns-resolver). Pure functions: the devices are read in dbus.ts.
 */
import type { NmstateState } from '../../base/nmstate.js';
import { bytesToIpv6, type Interface, networkOrderToIpv4, type PlainSettings, type Route } from './encoding.js';
import { BR_EX, type TranslationOptions } from './br-ex-bridge.js';
import { DEFAULT_DNS_PRIORITY } from './profiles.js';

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
