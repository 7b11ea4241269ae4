import { readFileSync } from 'node:fs';
import path from 'node:path';
import dbus from 'dbus-next';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import type { NmstateState } from '../config/v1/schema.js';
import { compareNetworkState } from '../node/network-state.js';
import {
  type DeviceData,
  ipv4ToNetworkOrder,
  mergeSettings,
  networkOrderToIpv4,
  plain,
  profilesFor,
  type Settings,
  stateFromDevices,
  UnsupportedStateError,
} from './nm-settings.js';

const { Variant } = dbus;

/** settings with each variant shown as [signature, value], the way a test reads them best */
function signed(settings: Settings): Record<string, Record<string, [string, unknown]>> {
  return Object.fromEntries(Object.entries(settings).map(([s, keys]) => [s, Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, [v.signature, plain(v)]]))]));
}

const BRIDGE_SITE: NmstateState = {
  interfaces: [
    { name: 'br-ex', type: 'linux-bridge', state: 'up', bridge: { options: { stp: { enabled: false } }, port: [{ name: 'ens4' }] }, ipv4: { enabled: true, dhcp: false, address: [{ ip: '192.0.2.20', 'prefix-length': 24 }] }, ipv6: { enabled: false } },
    { name: 'ens4', type: 'ethernet', state: 'up', ipv4: { enabled: false }, ipv6: { enabled: false } },
  ],
  routes: { config: [{ destination: '0.0.0.0/0', 'next-hop-address': '192.0.2.1', 'next-hop-interface': 'br-ex' }, { destination: '10.9.0.0/16', 'next-hop-address': '192.0.2.254', 'next-hop-interface': 'br-ex', metric: 50 }] },
  'dns-resolver': { config: { server: ['192.0.2.53', '2001:db8::53'], search: ['store.example.com'] } },
} as NmstateState;

describe('profilesFor', () => {
  it('makes a bridge with its port, static IPv4, the default gateway, a route and DNS, with the variant types NetworkManager wants', () => {
    const plan = profilesFor(BRIDGE_SITE);
    expect(plan.profiles.map((p) => [p.name, p.role])).toEqual([['br-ex', 'controller'], ['ens4', 'port']]);
    expect(signed(plan.profiles[0]!.settings)).toEqual({
      connection: { id: ['s', 'br-ex'], type: ['s', 'bridge'], 'interface-name': ['s', 'br-ex'], autoconnect: ['b', true] },
      bridge: { stp: ['b', false] },
      ipv4: {
        method: ['s', 'manual'],
        'address-data': ['aa{sv}', [{ address: '192.0.2.20', prefix: 24 }]],
        gateway: ['s', '192.0.2.1'],
        'route-data': ['aa{sv}', [{ dest: '10.9.0.0', prefix: 16, 'next-hop': '192.0.2.254', metric: 50 }]],
        dns: ['au', [ipv4ToNetworkOrder('192.0.2.53')]],
        'dns-search': ['as', ['store.example.com']],
      },
      ipv6: { method: ['s', 'disabled'] },
    });
    // a port: bound to its bridge and without IP settings of its own
    expect(signed(plan.profiles[1]!.settings)).toEqual({
      connection: { id: ['s', 'ens4'], type: ['s', '802-3-ethernet'], 'interface-name': ['s', 'ens4'], autoconnect: ['b', true], master: ['s', 'br-ex'], 'slave-type': ['s', 'bridge'] },
      '802-3-ethernet': {},
    });
  });

  it('writes IPv4 DNS servers in network byte order and IPv6 ones as 16 bytes', () => {
    expect(ipv4ToNetworkOrder('192.0.2.53')).toBe(0x350200c0);
    expect(networkOrderToIpv4(0x350200c0)).toBe('192.0.2.53');
    const plan = profilesFor({ ...BRIDGE_SITE, interfaces: [{ name: 'br-ex', type: 'linux-bridge', ipv4: { enabled: true, dhcp: true }, ipv6: { enabled: true, autoconf: true } }] } as NmstateState);
    const ipv6 = plan.profiles[0]!.settings.ipv6!;
    expect(ipv6.dns!.signature).toBe('aay');
    expect(plain(ipv6.dns)).toEqual([[0x20, 0x01, 0x0d, 0xb8, ...Array(11).fill(0), 0x53]]);
    expect(signed(plan.profiles[0]!.settings).ipv4).toMatchObject({ method: ['s', 'auto'], 'ignore-auto-dns': ['b', true] });
  });

  it('makes vlans and bonds, and sorts the bond before its ports', () => {
    const state = { interfaces: [
      { name: 'eno1', type: 'ethernet' },
      { name: 'bond0', type: 'bond', 'link-aggregation': { mode: '802.3ad', port: ['eno1', 'eno2'] }, ipv4: { enabled: false } },
      { name: 'eno2', type: 'ethernet' },
      { name: 'bond0.42', type: 'vlan', vlan: { 'base-iface': 'bond0', id: 42 }, ipv4: { enabled: true, address: [{ ip: '10.42.0.2', 'prefix-length': 24 }] } },
    ] } as NmstateState;
    const plan = profilesFor(state);
    expect(plan.profiles.map((p) => `${p.name}:${p.role}`)).toEqual(['bond0:controller', 'eno1:port', 'eno2:port', 'bond0.42:plain']);
    expect(signed(plan.profiles[0]!.settings).bond).toEqual({ options: ['a{ss}', { mode: '802.3ad' }] });
    expect(signed(plan.profiles[3]!.settings).vlan).toEqual({ parent: ['s', 'bond0'], id: ['u', 42] });
  });

  it('lists interfaces to remove or take down, and leaves ignored ones alone', () => {
    const plan = profilesFor({ interfaces: [{ name: 'old0', state: 'absent' }, { name: 'eth9', state: 'down' }, { name: 'ens3', state: 'ignore' }] } as NmstateState);
    expect(plan).toEqual({ profiles: [], absent: ['old0'], down: ['eth9'] });
  });

  it('refuses OVS interfaces before anything changes, saying nmstatectl is needed', () => {
    expect(() => profilesFor({ interfaces: [{ name: 'br-ex', type: 'ovs-interface' }] } as NmstateState)).toThrow(UnsupportedStateError);
    expect(() => profilesFor({ interfaces: [{ name: 'br-ex', type: 'ovs-interface' }] } as NmstateState)).toThrow('OVS needs nmstatectl');
  });

  it.each(['dhcp', 'dual-stack', 'vlan', 'bond'])('translates the %s example without refusing it', (example) => {
    const dir = path.join(__dirname, '../../nmstate-examples', example);
    const site = yaml.load(readFileSync(path.join(dir, 'site-config.yaml'), 'utf8')) as { spec: { network: { nmstateFile?: string; nmstate?: NmstateState } } };
    const state = site.spec.network.nmstate ?? (yaml.load(readFileSync(path.join(dir, site.spec.network.nmstateFile!), 'utf8')) as NmstateState);
    const ovs = (state.interfaces ?? []).some((i) => i.type?.startsWith('ovs-'));
    if (ovs) expect(() => profilesFor(state)).toThrow('OVS needs nmstatectl');
    else expect(profilesFor(state).profiles.length).toBeGreaterThan(0);
  });
});

describe('mergeSettings', () => {
  const existing: Settings = {
    connection: { id: new Variant('s', 'uplink'), uuid: new Variant('s', 'a-b-c'), type: new Variant('s', '802-3-ethernet'), 'interface-name': new Variant('s', 'ens4') },
    '802-3-ethernet': {},
    ipv4: { method: new Variant('s', 'auto') },
    ipv6: { method: new Variant('s', 'auto') },
    proxy: {},
  };

  it('keeps the profile identity and what the desired state does not set, and drops IP settings from a new port', () => {
    const port = profilesFor(BRIDGE_SITE).profiles[1]!.settings;
    const merged = signed(mergeSettings(existing, port));
    expect(merged.connection).toEqual({ id: ['s', 'uplink'], uuid: ['s', 'a-b-c'], type: ['s', '802-3-ethernet'], 'interface-name': ['s', 'ens4'], autoconnect: ['b', true], master: ['s', 'br-ex'], 'slave-type': ['s', 'bridge'] });
    expect(merged.ipv4).toBeUndefined();
    expect(merged.proxy).toEqual({});
  });

  it('unbinds a former port that now carries its own address', () => {
    const formerPort: Settings = { ...existing, connection: { ...existing.connection, master: new Variant('s', 'br-ex'), 'slave-type': new Variant('s', 'bridge') } };
    const own = profilesFor({ interfaces: [{ name: 'ens4', type: 'ethernet', ipv4: { enabled: true, dhcp: true } }] } as NmstateState).profiles[0]!.settings;
    const merged = signed(mergeSettings(formerPort, own));
    expect(merged.connection!.master).toBeUndefined();
    expect(merged.ipv4!.method).toEqual(['s', 'auto']);
  });
});

describe('stateFromDevices', () => {
  const applied = (settings: Settings) => plain(settings) as DeviceData['applied'];
  const plan = profilesFor(BRIDGE_SITE);
  const devices: DeviceData[] = [
    { name: 'lo', deviceType: 32, state: 100, ip4: { addresses: [{ address: '127.0.0.1', prefix: 8 }], routes: [] } },
    { name: 'ens3', deviceType: 1, state: 10, hwAddress: '52:54:00:12:34:56', ip4: { addresses: [{ address: '10.0.2.15', prefix: 24 }], routes: [] } },
    {
      name: 'br-ex',
      deviceType: 13,
      state: 100,
      mtu: 1500,
      ip4: { addresses: [{ address: '192.0.2.20', prefix: 24 }, { address: '192.168.127.10', prefix: 24 }], routes: [{ dest: '0.0.0.0', prefix: 0, nextHop: '192.0.2.1', metric: 425 }, { dest: '192.0.2.0', prefix: 24, nextHop: '0.0.0.0', metric: 425 }] },
      applied: applied(plan.profiles[0]!.settings),
    },
    { name: 'ens4', deviceType: 1, state: 100, applied: applied(plan.profiles[1]!.settings) },
  ];

  it('reads what NetworkManager runs back as nmstate, which the network step then finds settled', () => {
    const state = stateFromDevices(devices, { server: ['192.0.2.53'], search: ['store.example.com'] });
    expect(state.interfaces!.map((i) => [i.name, i.type, i.state])).toEqual([['lo', 'loopback', 'up'], ['ens3', 'ethernet', 'ignore'], ['br-ex', 'linux-bridge', 'up'], ['ens4', 'ethernet', 'up']]);
    expect((state.interfaces![2] as { bridge?: unknown }).bridge).toEqual({ port: [{ name: 'ens4' }] });
    expect((state.routes as { running: unknown[] }).running).toContainEqual({ destination: '0.0.0.0/0', 'next-hop-address': '192.0.2.1', 'next-hop-interface': 'br-ex', metric: 425 });
    expect(state['dns-resolver']!.config).toEqual({ server: ['192.0.2.53'], search: ['store.example.com'] });
    const site = { ...BRIDGE_SITE, 'dns-resolver': { config: { server: ['192.0.2.53'], search: ['store.example.com'] } } } as NmstateState;
    expect(compareNetworkState(site, state, '192.168.127.10/24')).toEqual([]);
  });

  it('finds the difference when the bridge has not got the site address', () => {
    const factory = devices.map((d) => (d.name === 'br-ex' ? { ...d, ip4: { addresses: [{ address: '192.0.2.100', prefix: 24 }], routes: [] } } : d));
    const differences = compareNetworkState(BRIDGE_SITE, stateFromDevices(factory, { server: [], search: [] }));
    expect(differences.map((d) => d.path)).toContain('interfaces[br-ex].ipv4.address');
  });
});
