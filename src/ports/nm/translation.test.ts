/** The translation both ways: desired state to profiles (profiles.ts), devices back to nmstate (current-state.ts). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import dbus from 'dbus-next';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import type { NmstateState } from '../../base/nmstate.js';
import { compareNetworkState } from '../../node/network-state.js';
import { type DeviceData, stateFromDevices } from './current-state.js';
import { ipv4ToNetworkOrder, networkOrderToIpv4, plain, type Settings } from './encoding.js';
import { brExAsLinuxBridge } from './br-ex-bridge.js';
import { mergeSettings } from './profile-updates.js';
import { profilesFor, UnsupportedStateError } from './profiles.js';

const { Variant } = dbus;

/** settings with each variant shown as [signature, value], the way a test reads them best */
function signed(settings: Settings): Record<string, Record<string, [string, unknown]>> {
  return Object.fromEntries(
    Object.entries(settings).map(([s, keys]) => [
      s,
      Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, [v.signature, plain(v)]])),
    ]),
  );
}

const BRIDGE_SITE: NmstateState = {
  interfaces: [
    {
      name: 'br-ex',
      type: 'linux-bridge',
      state: 'up',
      bridge: { options: { stp: { enabled: false } }, port: [{ name: 'ens4' }] },
      ipv4: { enabled: true, dhcp: false, address: [{ ip: '192.0.2.20', 'prefix-length': 24 }] },
      ipv6: { enabled: false },
    },
    { name: 'ens4', type: 'ethernet', state: 'up', ipv4: { enabled: false }, ipv6: { enabled: false } },
  ],
  routes: {
    config: [
      { destination: '0.0.0.0/0', 'next-hop-address': '192.0.2.1', 'next-hop-interface': 'br-ex' },
      { destination: '10.9.0.0/16', 'next-hop-address': '192.0.2.254', 'next-hop-interface': 'br-ex', metric: 50 },
    ],
  },
  'dns-resolver': { config: { server: ['192.0.2.53'], search: ['store.example.com'] } },
} as NmstateState;

describe('profilesFor', () => {
  it('makes a bridge with its port, static IPv4, the default gateway, a route and DNS, with the variant types NetworkManager wants', () => {
    const plan = profilesFor(BRIDGE_SITE);
    expect(plan.profiles.map((p) => [p.name, p.role])).toEqual([
      ['br-ex', 'controller'],
      ['ens4', 'port'],
    ]);
    expect(signed(plan.profiles[0]!.settings)).toEqual({
      connection: {
        id: ['s', 'br-ex'],
        type: ['s', 'bridge'],
        'interface-name': ['s', 'br-ex'],
        autoconnect: ['b', true],
      },
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
      connection: {
        id: ['s', 'ens4'],
        type: ['s', '802-3-ethernet'],
        'interface-name': ['s', 'ens4'],
        autoconnect: ['b', true],
        master: ['s', 'br-ex'],
        'slave-type': ['s', 'bridge'],
      },
      '802-3-ethernet': {},
    });
  });

  it('writes IPv4 DNS servers in network byte order and IPv6 ones as 16 bytes', () => {
    expect(ipv4ToNetworkOrder('192.0.2.53')).toBe(0x350200c0);
    expect(networkOrderToIpv4(0x350200c0)).toBe('192.0.2.53');
    const dualStack = {
      ...BRIDGE_SITE,
      'dns-resolver': { config: { server: ['192.0.2.53', '2001:db8::53'], search: ['store.example.com'] } },
    } as NmstateState;
    const plan = profilesFor({
      ...dualStack,
      interfaces: [
        {
          name: 'br-ex',
          type: 'linux-bridge',
          ipv4: { enabled: true, dhcp: true },
          ipv6: { enabled: true, autoconf: true },
        },
      ],
    } as NmstateState);
    const ipv6 = plan.profiles[0]!.settings.ipv6!;
    expect(ipv6.dns!.signature).toBe('aay');
    expect(plain(ipv6.dns)).toEqual([[0x20, 0x01, 0x0d, 0xb8, ...Array(11).fill(0), 0x53]]);
    expect(signed(plan.profiles[0]!.settings).ipv4).toMatchObject({
      method: ['s', 'auto'],
      'ignore-auto-dns': ['b', true],
    });
  });

  it("puts each family's DNS servers on an interface with that family, and refuses servers no interface can carry", () => {
    const state = {
      interfaces: [
        { name: 'ens4', type: 'ethernet', ipv4: { enabled: true, dhcp: true }, ipv6: { enabled: false } },
        { name: 'ens5', type: 'ethernet', ipv4: { enabled: false }, ipv6: { enabled: true, autoconf: true } },
      ],
      'dns-resolver': { config: { server: ['2001:db8::53', '192.0.2.53'], search: ['store.example.com'] } },
    } as NmstateState;
    const [ens4, ens5] = profilesFor(state).profiles.map((p) => signed(p.settings));
    expect([ens4!.ipv4!.dns, ens4!.ipv4!['dns-search'], ens4!.ipv6!.dns]).toEqual([
      ['au', [ipv4ToNetworkOrder('192.0.2.53')]],
      ['as', ['store.example.com']],
      undefined,
    ]);
    expect([ens5!.ipv4!.dns, ens5!.ipv6!.dns]).toEqual([
      undefined,
      ['aay', [[0x20, 0x01, 0x0d, 0xb8, ...Array(11).fill(0), 0x53]]],
    ]);
    const v4only = { ...state, interfaces: [state.interfaces![0]!] } as NmstateState;
    expect(() => profilesFor(v4only)).toThrow(
      'dns-resolver.config.server: no interface in the site network has IPv6 enabled to carry 2001:db8::53',
    );
  });

  it('keeps a site order with IPv6 servers first through DNS priorities, reads it back in that order, and refuses alternating families', () => {
    const state = {
      interfaces: [
        {
          name: 'br-ex',
          type: 'linux-bridge',
          ipv4: { enabled: true, dhcp: true },
          ipv6: { enabled: true, autoconf: true },
        },
      ],
      'dns-resolver': { config: { server: ['2001:db8::53', '192.0.2.53', '192.0.2.54'] } },
    } as NmstateState;
    const settings = profilesFor(state).profiles[0]!.settings;
    expect([signed(settings).ipv6!['dns-priority'], signed(settings).ipv4!['dns-priority']]).toEqual([
      ['i', 40],
      ['i', 50],
    ]);
    const shown = stateFromDevices(
      [{ name: 'br-ex', deviceType: 13, state: 100, applied: plain(settings) as DeviceData['applied'] }],
      { server: [], search: [] },
    );
    expect(shown['dns-resolver']!.config!.server).toEqual(['2001:db8::53', '192.0.2.53', '192.0.2.54']);
    // IPv4 first needs no priorities: it is NetworkManager's own order
    const v4first = profilesFor({
      ...state,
      'dns-resolver': { config: { server: ['192.0.2.53', '2001:db8::53'] } },
    } as NmstateState).profiles[0]!.settings;
    expect([v4first.ipv4!['dns-priority'], v4first.ipv6!['dns-priority']]).toEqual([undefined, undefined]);
    expect(() =>
      profilesFor({
        ...state,
        'dns-resolver': { config: { server: ['192.0.2.53', '2001:db8::53', '192.0.2.54'] } },
      } as NmstateState),
    ).toThrow('dns-resolver.config.server: 192.0.2.53, 2001:db8::53, 192.0.2.54 alternate between IPv4 and IPv6');
  });

  it('makes vlans and bonds, and sorts the bond before its ports', () => {
    const state = {
      interfaces: [
        { name: 'eno1', type: 'ethernet' },
        {
          name: 'bond0',
          type: 'bond',
          'link-aggregation': { mode: '802.3ad', port: ['eno1', 'eno2'], options: { miimon: 100 } },
          ipv4: { enabled: false },
        },
        { name: 'eno2', type: 'ethernet' },
        {
          name: 'bond0.42',
          type: 'vlan',
          vlan: { 'base-iface': 'bond0', id: 42 },
          ipv4: { enabled: true, address: [{ ip: '10.42.0.2', 'prefix-length': 24 }] },
        },
      ],
    } as NmstateState;
    const plan = profilesFor(state);
    expect(plan.profiles.map((p) => `${p.name}:${p.role}`)).toEqual([
      'bond0:controller',
      'eno1:port',
      'eno2:port',
      'bond0.42:plain',
    ]);
    expect(() =>
      profilesFor({
        interfaces: [
          { name: 'a', type: 'bond', 'link-aggregation': { mode: 'active-backup', port: ['b'] } },
          { name: 'b', type: 'bond', 'link-aggregation': { mode: 'active-backup', port: ['a'] } },
        ],
      } as NmstateState),
    ).toThrow('controllers form a loop');
    expect(signed(plan.profiles[0]!.settings).bond).toEqual({ options: ['a{ss}', { mode: '802.3ad', miimon: '100' }] });
    expect(signed(plan.profiles[3]!.settings).vlan).toEqual({ parent: ['s', 'bond0'], id: ['u', 42] });
  });

  it('lists interfaces to remove or take down, and leaves ignored ones alone', () => {
    const plan = profilesFor({
      interfaces: [
        { name: 'old0', state: 'absent' },
        { name: 'eth9', state: 'down' },
        { name: 'ens3', state: 'ignore' },
      ],
    } as NmstateState);
    expect(plan).toEqual({ profiles: [], absent: ['old0'], down: ['eth9'] });
  });

  it('refuses OVS interfaces before anything changes, saying nmstatectl is needed', () => {
    expect(() => profilesFor({ interfaces: [{ name: 'br-ex', type: 'ovs-interface' }] } as NmstateState)).toThrow(
      UnsupportedStateError,
    );
    expect(() => profilesFor({ interfaces: [{ name: 'br-ex', type: 'ovs-interface' }] } as NmstateState)).toThrow(
      'OVS needs nmstatectl',
    );
  });

  /** profile name, connection type, controller, ipv4 method, ipv4 addresses, gateway: how each profile reads */
  const outline = (settings: Settings) => {
    const s = signed(settings);
    return [
      s.connection!.id![1],
      s.connection!.type![1],
      s.connection!.master?.[1] ?? '-',
      s.ipv4?.method?.[1] ?? '-',
      (s.ipv4?.['address-data']?.[1] as { address: string; prefix: number }[] | undefined)
        ?.map((a) => `${a.address}/${a.prefix}`)
        .join(' ') ?? '-',
      s.ipv4?.gateway?.[1] ?? '-',
    ];
  };
  const examples: [string, string[][]][] = [
    ['nmstate-examples/dhcp', [['br-ex', 'bridge', '-', 'auto', '-', '-']]],
    ['nmstate-examples/static-ipv4', [['br-ex', 'bridge', '-', 'manual', '10.42.0.20/24', '10.42.0.1']]],
    ['nmstate-examples/dual-stack', [['br-ex', 'bridge', '-', 'manual', '172.20.8.20/24', '172.20.8.1']]],
    [
      'nmstate-examples/vlan',
      [
        ['ens3', '802-3-ethernet', '-', 'disabled', '-', '-'],
        ['br-ex', 'bridge', '-', 'manual', '10.100.0.20/24', '10.100.0.1'],
        ['ens3.100', 'vlan', 'br-ex', '-', '-', '-'],
      ],
    ],
    [
      'nmstate-examples/bond',
      [
        ['br-ex', 'bridge', '-', 'manual', '10.61.0.20/24', '10.61.0.1'],
        ['bond0', 'bond', 'br-ex', '-', '-', '-'],
        ['ens3', '802-3-ethernet', 'bond0', '-', '-', '-'],
        ['ens4', '802-3-ethernet', 'bond0', '-', '-', '-'],
      ],
    ],
    ['examples/store-0042', [['br-ex', 'bridge', '-', 'manual', '10.42.0.20/24', '10.42.0.1']]],
  ];

  it.each(examples)(
    '%s: refused as OVS by default; with br-ex as a Linux bridge, made as these profiles',
    (folder, profiles) => {
      const dir = path.join(__dirname, '../../..', folder);
      const site = yaml.load(readFileSync(path.join(dir, 'site-config.yaml'), 'utf8')) as {
        spec: { network: { nmstateFile?: string; nmstate?: NmstateState } };
      };
      const state =
        site.spec.network.nmstate ??
        (yaml.load(readFileSync(path.join(dir, site.spec.network.nmstateFile!), 'utf8')) as NmstateState);
      expect(() => profilesFor(state)).toThrow(
        'OVS needs nmstatectl, or SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE=1 to make br-ex a Linux bridge',
      );
      const plan = profilesFor(state, { brExAsLinuxBridge: true });
      expect(plan.profiles.map((p) => outline(p.settings))).toEqual(profiles);
      // the DNS servers are all on the profiles, each family on an interface that has it
      const dns = (state['dns-resolver']?.config?.server ?? []).length;
      const written = plan.profiles.flatMap((p) => [
        ...((plain(p.settings.ipv4?.dns) as unknown[] | undefined) ?? []),
        ...((plain(p.settings.ipv6?.dns) as unknown[] | undefined) ?? []),
      ]);
      expect(written).toHaveLength(dns);
    },
  );

  it("takes the OVS bridge's ports for the Linux bridge, without br-ex itself, and its IP settings from the ovs-interface", () => {
    const state = brExAsLinuxBridge({
      interfaces: [
        {
          name: 'br-ex',
          type: 'ovs-bridge',
          bridge: { options: { stp: true }, port: [{ name: 'ens3' }, { name: 'br-ex' }] },
        },
        { name: 'br-ex', type: 'ovs-interface', ipv4: { enabled: true, dhcp: true } },
      ],
    } as NmstateState);
    expect(state.interfaces).toEqual([
      {
        name: 'br-ex',
        type: 'linux-bridge',
        ipv4: { enabled: true, dhcp: true },
        bridge: { options: { stp: { enabled: false } }, port: [{ name: 'ens3' }] },
      },
    ]);
  });
});

describe('mergeSettings', () => {
  const existing: Settings = {
    connection: {
      id: new Variant('s', 'uplink'),
      uuid: new Variant('s', 'a-b-c'),
      type: new Variant('s', '802-3-ethernet'),
      'interface-name': new Variant('s', 'ens4'),
    },
    '802-3-ethernet': {},
    ipv4: { method: new Variant('s', 'auto') },
    ipv6: { method: new Variant('s', 'auto') },
    proxy: {},
  };

  it('keeps the profile identity and what the desired state does not set, and drops IP settings from a new port', () => {
    const port = profilesFor(BRIDGE_SITE).profiles[1]!.settings;
    const merged = signed(mergeSettings(existing, port));
    expect(merged.connection).toEqual({
      id: ['s', 'uplink'],
      uuid: ['s', 'a-b-c'],
      type: ['s', '802-3-ethernet'],
      'interface-name': ['s', 'ens4'],
      autoconnect: ['b', true],
      master: ['s', 'br-ex'],
      'slave-type': ['s', 'bridge'],
    });
    expect(merged.ipv4).toBeUndefined();
    expect(merged.proxy).toEqual({});
  });

  it('keeps the keys of a section the desired state does not set, and replaces IP sections whole', () => {
    const tuned: Settings = {
      ...existing,
      '802-3-ethernet': {
        mtu: new Variant('u', 9000),
        'mac-address': new Variant('ay', Buffer.from([0x52, 0x54, 0, 0x12, 0x34, 0x57])),
      },
      ipv4: {
        method: new Variant('s', 'manual'),
        addresses: new Variant('aau', [[0x0a00020a, 24, 0]]),
        'address-data': new Variant('aa{sv}', []),
        'may-fail': new Variant('b', false),
      },
    };
    const own = profilesFor({
      interfaces: [{ name: 'ens4', type: 'ethernet', ipv4: { enabled: true, dhcp: true } }],
    } as NmstateState).profiles[0]!.settings;
    const merged = signed(mergeSettings(tuned, own));
    expect(merged['802-3-ethernet']).toEqual({
      mtu: ['u', 9000],
      'mac-address': ['ay', [0x52, 0x54, 0, 0x12, 0x34, 0x57]],
    });
    expect(merged.ipv4).toEqual({ method: ['s', 'auto'] });
  });

  it('unbinds a former port that now carries its own address', () => {
    const formerPort: Settings = {
      ...existing,
      connection: {
        ...existing.connection,
        master: new Variant('s', 'br-ex'),
        'slave-type': new Variant('s', 'bridge'),
      },
    };
    const own = profilesFor({
      interfaces: [{ name: 'ens4', type: 'ethernet', ipv4: { enabled: true, dhcp: true } }],
    } as NmstateState).profiles[0]!.settings;
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
    {
      name: 'ens3',
      deviceType: 1,
      state: 10,
      hwAddress: '52:54:00:12:34:56',
      ip4: { addresses: [{ address: '10.0.2.15', prefix: 24 }], routes: [] },
    },
    {
      name: 'br-ex',
      deviceType: 13,
      state: 100,
      mtu: 1500,
      ip4: {
        addresses: [
          { address: '192.0.2.20', prefix: 24 },
          { address: '192.168.127.10', prefix: 24 },
        ],
        routes: [
          { dest: '0.0.0.0', prefix: 0, nextHop: '192.0.2.1', metric: 425 },
          { dest: '192.0.2.0', prefix: 24, nextHop: '0.0.0.0', metric: 425 },
        ],
      },
      applied: applied(plan.profiles[0]!.settings),
    },
    { name: 'ens4', deviceType: 1, state: 100, applied: applied(plan.profiles[1]!.settings) },
  ];

  it('reads what NetworkManager runs back as nmstate, which the network step then finds settled', () => {
    const state = stateFromDevices(devices, { server: ['192.0.2.53'], search: ['store.example.com'] });
    expect(state.interfaces!.map((i) => [i.name, i.type, i.state])).toEqual([
      ['lo', 'loopback', 'up'],
      ['ens3', 'ethernet', 'ignore'],
      ['br-ex', 'linux-bridge', 'up'],
      ['ens4', 'ethernet', 'up'],
    ]);
    expect((state.interfaces![2] as { bridge?: unknown }).bridge).toEqual({ port: [{ name: 'ens4' }] });
    expect((state.routes as { running: unknown[] }).running).toContainEqual({
      destination: '0.0.0.0/0',
      'next-hop-address': '192.0.2.1',
      'next-hop-interface': 'br-ex',
      metric: 425,
    });
    expect(state['dns-resolver']!.config).toEqual({ server: ['192.0.2.53'], search: ['store.example.com'] });
    const site = {
      ...BRIDGE_SITE,
      'dns-resolver': { config: { server: ['192.0.2.53'], search: ['store.example.com'] } },
    } as NmstateState;
    expect(compareNetworkState(site, state, '192.168.127.10/24')).toEqual([]);
  });

  it('finds the difference when the bridge has not got the site address', () => {
    const factory = devices.map((d) =>
      d.name === 'br-ex' ? { ...d, ip4: { addresses: [{ address: '192.0.2.100', prefix: 24 }], routes: [] } } : d,
    );
    const differences = compareNetworkState(BRIDGE_SITE, stateFromDevices(factory, { server: [], search: [] }));
    expect(differences.map((d) => d.path)).toContain('interfaces[br-ex].ipv4.address');
  });
});
