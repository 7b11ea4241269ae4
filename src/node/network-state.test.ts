import { describe, expect, it } from 'vitest';
import type { NmstateState } from '../base/nmstate.js';
import { factoryNetwork } from '../../test/node/factory-network.js';
import {
  compareNetworkState,
  defaultGateways,
  desiredNetworkState,
  differenceLines,
  missingGatewayFamilies,
} from './network-state.js';

const site: NmstateState = {
  interfaces: [
    {
      name: 'br-ex',
      type: 'ovs-interface',
      state: 'up',
      ipv4: { enabled: true, dhcp: false, address: [{ ip: '10.42.0.20', 'prefix-length': 24 }] },
      ipv6: { enabled: false },
    },
  ],
  routes: { config: [{ destination: '0.0.0.0/0', 'next-hop-address': '10.42.0.1', 'next-hop-interface': 'br-ex' }] },
  'dns-resolver': { config: { server: ['10.42.0.53'], search: ['store42.example.com'] } },
};

/** The state nmstate reports once `site` is applied on the factory node (the internal IP kept on br-ex). */
function applied(): NmstateState {
  const state = factoryNetwork();
  const brEx = state.interfaces!.find((i) => i.name === 'br-ex' && i.type === 'ovs-interface')!;
  brEx.ipv4 = {
    enabled: true,
    dhcp: false,
    address: [
      { ip: '192.168.127.10', 'prefix-length': 24 },
      { ip: '10.42.0.20', 'prefix-length': 24 },
    ],
  };
  brEx.ipv6 = { enabled: false };
  state.routes = { running: site.routes!.config!, config: site.routes!.config! } as NmstateState['routes'];
  state['dns-resolver'] = { running: site['dns-resolver']!.config!, config: site['dns-resolver']!.config! };
  return state;
}

describe('desiredNetworkState', () => {
  it('adds the internal IP to a br-ex with static addresses, once', () => {
    const desired = desiredNetworkState(site, '192.168.127.10/24');
    expect(desired.interfaces![0]!.ipv4!.address).toEqual([
      { ip: '192.168.127.10', 'prefix-length': 24 },
      { ip: '10.42.0.20', 'prefix-length': 24 },
    ]);
    expect(desiredNetworkState(desired, '192.168.127.10/24')).toEqual(desired);
    expect(site.interfaces![0]!.ipv4!.address).toHaveLength(1);
  });

  it('adds the internal IP first beside DHCP on br-ex, keeping the method automatic', () => {
    const dhcp: NmstateState = {
      interfaces: [
        { name: 'br-ex', type: 'ovs-interface', state: 'up', ipv4: { enabled: true, dhcp: true } },
        { name: 'ens3', ipv4: { enabled: true, dhcp: true } },
      ],
    };
    const desired = desiredNetworkState(dhcp, '192.168.127.10/24');
    expect(desired.interfaces![0]!.ipv4).toEqual({
      enabled: true,
      dhcp: true,
      address: [{ ip: '192.168.127.10', 'prefix-length': 24 }],
    });
    expect(desired.interfaces![1]).toEqual(dhcp.interfaces![1]);
    expect(desiredNetworkState(desired, '192.168.127.10/24')).toEqual(desired);
    // IPv6 autoconf takes the same path
    const slaac: NmstateState = {
      interfaces: [{ name: 'br-ex', ipv6: { enabled: true, autoconf: true, dhcp: false } }],
    };
    expect(desiredNetworkState(slaac, 'fd00::10/64').interfaces![0]!.ipv6!.address).toEqual([
      { ip: 'fd00::10', 'prefix-length': 64 },
    ]);
  });

  it('leaves other interfaces, a disabled family and the other family alone', () => {
    const other: NmstateState = {
      interfaces: [
        { name: 'br-ex', ipv4: { enabled: false } },
        { name: 'ens3', ipv4: { enabled: true, address: [] } },
      ],
    };
    expect(desiredNetworkState(other, '192.168.127.10/24')).toEqual(other);
    expect(desiredNetworkState(site, 'fd00::10/64')).toEqual(site);
    expect(desiredNetworkState(site, undefined)).toBe(site);
  });
});

describe('compareNetworkState', () => {
  it('names every difference between the site network and the factory one', () => {
    const diffs = compareNetworkState(
      desiredNetworkState(site, '192.168.127.10/24'),
      factoryNetwork(),
      '192.168.127.10/24',
    );
    expect(diffs).toEqual([
      { path: 'interfaces[br-ex].ipv4.dhcp', want: 'false', have: 'true' },
      {
        path: 'interfaces[br-ex].ipv4.address',
        want: '10.42.0.20/24, 192.168.127.10/24',
        have: '192.168.1.50/24, 192.168.127.10/24',
      },
      { path: 'interfaces[br-ex].ipv6.enabled', want: 'false', have: 'true' },
      { path: 'routes.config[0.0.0.0/0 via 10.42.0.1 dev br-ex]', want: 'present', have: 'absent' },
      { path: 'dns-resolver.config.server', want: '10.42.0.53', have: '192.168.1.1' },
      { path: 'dns-resolver.config.search', want: 'store42.example.com', have: '(none)' },
    ]);
    expect(differenceLines(diffs.slice(0, 1))).toEqual([
      '- interfaces[br-ex].ipv4.dhcp: true',
      '+ interfaces[br-ex].ipv4.dhcp: false',
    ]);
  });

  it('finds nothing once the state is applied, with the internal IP and link-local addresses as extras', () => {
    const current = applied();
    current
      .interfaces!.find((i) => i.name === 'br-ex' && i.type === 'ovs-interface')!
      .ipv4!.address!.push({ ip: 'fe80::1', 'prefix-length': 64 });
    expect(compareNetworkState(site, current, '192.168.127.10/24')).toEqual([]);
    expect(compareNetworkState(desiredNetworkState(site, '192.168.127.10/24'), current, '192.168.127.10/24')).toEqual(
      [],
    );
  });

  it('counts a foreign extra address on a static interface as a difference', () => {
    const current = applied();
    current
      .interfaces!.find((i) => i.name === 'br-ex' && i.type === 'ovs-interface')!
      .ipv4!.address!.push({ ip: '10.42.0.99', 'prefix-length': 24 });
    expect(compareNetworkState(site, current, '192.168.127.10/24').map((d) => d.path)).toEqual([
      'interfaces[br-ex].ipv4.address',
    ]);
  });

  it('compares IPv6 in canonical form and ignores addresses under DHCP', () => {
    const want: NmstateState = {
      interfaces: [
        { name: 'ens3', ipv6: { enabled: true, address: [{ ip: '2001:DB8:0:0::10', 'prefix-length': 64 }] } },
        { name: 'ens4', ipv4: { enabled: true, dhcp: true } },
      ],
    };
    const have: NmstateState = {
      interfaces: [
        { name: 'ens3', state: 'up', ipv6: { enabled: true, address: [{ ip: '2001:db8::10', 'prefix-length': 64 }] } },
        {
          name: 'ens4',
          state: 'up',
          ipv4: { enabled: true, dhcp: true, address: [{ ip: '192.168.9.9', 'prefix-length': 24 }] },
        },
      ],
    };
    expect(compareNetworkState(want, have)).toEqual([]);
  });

  it('checks interface state, MTU, MAC, VLAN and bond settings', () => {
    const want: NmstateState = {
      interfaces: [
        {
          name: 'bond0',
          type: 'bond',
          'link-aggregation': { mode: 'active-backup', port: ['ens3', 'ens4'] },
          mtu: 9000,
        },
        { name: 'ens3.100', type: 'vlan', vlan: { 'base-iface': 'ens3', id: 100 }, 'mac-address': '52:54:00:AA:BB:CC' },
        { name: 'eth9', state: 'absent' },
        { name: 'ens5', state: 'down' },
        { name: 'ens6', state: 'ignore' },
      ],
    };
    const have: NmstateState = {
      interfaces: [
        {
          name: 'bond0',
          type: 'bond',
          state: 'up',
          mtu: 1500,
          'link-aggregation': { mode: 'balance-rr', port: ['ens4', 'ens3'] },
        },
        {
          name: 'ens3.100',
          type: 'vlan',
          state: 'up',
          vlan: { 'base-iface': 'ens3', id: 200 },
          'mac-address': '52:54:00:aa:bb:cc',
        },
        { name: 'eth9', type: 'ethernet', state: 'up' },
        { name: 'ens5', type: 'ethernet', state: 'up' },
      ],
    };
    expect(compareNetworkState(want, have)).toEqual([
      { path: 'interfaces[bond0].mtu', want: '9000', have: '1500' },
      { path: 'interfaces[bond0].link-aggregation.mode', want: 'active-backup', have: 'balance-rr' },
      { path: 'interfaces[ens3.100].vlan.id', want: '100', have: '200' },
      { path: 'interfaces[eth9].state', want: 'absent', have: 'up' },
      { path: 'interfaces[ens5].state', want: 'down', have: 'up' },
    ]);
  });

  it('reports an interface that is missing, and a route that should be gone', () => {
    const want: NmstateState = {
      interfaces: [{ name: 'ens9', type: 'ethernet' }],
      routes: { config: [{ destination: '10.9.0.0/16', 'next-hop-interface': 'ens3', state: 'absent' } as never] },
    };
    const have: NmstateState = {
      interfaces: [],
      routes: {
        config: [{ destination: '10.9.0.0/16', 'next-hop-address': '10.0.0.1', 'next-hop-interface': 'ens3' }],
      },
    };
    expect(compareNetworkState(want, have)).toEqual([
      { path: 'interfaces[ens9].state', want: 'up', have: 'absent' },
      { path: 'routes.config[10.9.0.0/16 dev ens3]', want: 'absent', have: 'present' },
    ]);
  });

  it('takes an absent route without destination as every route of its interface, as nmstate does', () => {
    const want: NmstateState = { routes: { config: [{ state: 'absent', 'next-hop-interface': 'ens3' }] } };
    const route = (dev: string) => ({
      destination: '10.9.0.0/16',
      'next-hop-address': '10.0.0.1',
      'next-hop-interface': dev,
    });
    expect(compareNetworkState(want, { routes: { config: [route('ens3')] } })).toEqual([
      { path: 'routes.config[* dev ens3]', want: 'absent', have: 'present' },
    ]);
    expect(compareNetworkState(want, { routes: { config: [route('ens4')] } })).toEqual([]);
  });
});

describe('defaultGateways', () => {
  it('takes the next hops of the running default routes, once each', () => {
    expect(defaultGateways(factoryNetwork())).toEqual([{ address: '192.168.1.1', iface: 'br-ex' }]);
    const dual = {
      routes: {
        running: [
          { destination: '0.0.0.0/0', 'next-hop-address': '10.0.0.1', 'next-hop-interface': 'br-ex' },
          { destination: '0.0.0.0/0', 'next-hop-address': '10.0.0.1', 'next-hop-interface': 'br-ex', metric: 200 },
          { destination: '::/0', 'next-hop-address': 'fe80::1', 'next-hop-interface': 'br-ex' },
          { destination: '10.1.0.0/16', 'next-hop-address': '10.0.0.254' },
        ],
      },
    } as NmstateState;
    expect(defaultGateways(dual)).toEqual([
      { address: '10.0.0.1', iface: 'br-ex' },
      { address: 'fe80::1', iface: 'br-ex' },
    ]);
    expect(defaultGateways({})).toEqual([]);
  });
});

describe('dual-stack', () => {
  type Block = NonNullable<NonNullable<NmstateState['interfaces']>[number]['ipv4']>;
  const bridge = (ipv4: Block, ipv6: Block) => ({
    name: 'br-ex',
    type: 'ovs-interface',
    state: 'up' as const,
    ipv4,
    ipv6,
  });
  const staticBoth = bridge(
    { enabled: true, address: [{ ip: '10.42.0.20', 'prefix-length': 24 }] },
    { enabled: true, autoconf: false, address: [{ ip: 'fd00:42::20', 'prefix-length': 64 }] },
  );

  it('puts each internal IP first of its own family, and compares each against its own', () => {
    const desired = desiredNetworkState({ interfaces: [staticBoth] }, ['fd69::10/64', '192.168.127.10/24']);
    const br = desired.interfaces![0]!;
    expect(br.ipv4!.address!.map((a) => a.ip)).toEqual(['192.168.127.10', '10.42.0.20']);
    expect(br.ipv6!.address!.map((a) => a.ip)).toEqual(['fd69::10', 'fd00:42::20']);
    // the node holds both internal IPs beside a site-config that names neither: nothing differs
    const current = { interfaces: [bridge(br.ipv4!, br.ipv6!)] };
    expect(compareNetworkState({ interfaces: [staticBoth] }, current, ['fd69::10/64', '192.168.127.10/24'])).toEqual(
      [],
    );
    expect(compareNetworkState({ interfaces: [staticBoth] }, current, '192.168.127.10/24').map((d) => d.path)).toEqual([
      'interfaces[br-ex].ipv6.address',
    ]);
  });

  it.each([
    ['static both, both gateways', [staticBoth], ['0.0.0.0/0', '::/0'], ['10.42.0.1', 'fd00:42::1'], []],
    [
      'static both, the IPv6 gateway missing',
      [staticBoth],
      ['0.0.0.0/0', '::/0'],
      ['10.42.0.1'],
      ['no IPv6 default route, so no IPv6 gateway to ping'],
    ],
    ['static IPv6 without a default route of its own', [staticBoth], ['0.0.0.0/0'], ['10.42.0.1'], []],
    [
      'IPv6 by router advertisements (SLAAC), no router seen',
      [bridge({ enabled: true, dhcp: true }, { enabled: true, autoconf: true })],
      [],
      ['10.42.0.1'],
      ['no IPv6 default route, so no IPv6 gateway to ping'],
    ],
    ['IPv6-only', [bridge({ enabled: false }, { enabled: true, autoconf: false })], ['::/0'], ['fe80::1'], []],
  ])('gateways per family: %s', (_, interfaces, defaults, gateways, problems) => {
    const routes = { config: defaults.map((destination) => ({ destination, 'next-hop-address': '192.0.2.1' })) };
    expect(
      missingGatewayFamilies(
        { interfaces, routes },
        gateways.map((address) => ({ address })),
      ),
    ).toEqual(problems);
  });
});
