/**
 * The NetworkManager D-Bus adapter against a real dbus-daemon and a NetworkManager stand-in
 * (fake-networkmanager.ts) that checks the signatures and variant types it is given: what the agent
 * sends over the bus, what it reads back, and what the node is left with after apply, commit,
 * rollback and failed activations. The node modelled is the VM's: ens3 left to another network
 * stack, ens4 on DHCP through the profile `uplink`.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import dbus from 'dbus-next';
import yaml from 'js-yaml';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { NmstateState } from '../../src/base/nmstate.js';
import { RefusedError } from '../../src/base/errors.js';
import { networkStep } from '../../src/steps/network.js';
import { sshKeysStep } from '../../src/steps/ssh-keys.js';
import { testNode, testSite } from '../node/context.js';
import { createLogger } from '../../src/log/logger.js';
import { compareNetworkState, desiredNetworkState } from '../../src/node/network-state.js';
import {
  CHECKPOINT_FLAGS,
  createNetworkManager,
  type NetworkManagerNmstate,
  type NetworkManagerOptions,
  SAVE_WITHOUT_AUTOCONNECT,
} from '../../src/ports/networkmanager.js';
import { missingDbusDaemon, type PrivateBus, startPrivateBus } from '../dbus/bus.js';
import type { Settings } from '../../src/ports/nm/encoding.js';
import { DeviceType, FakeNetworkManager, type Recorded, signedSettings, type World } from './fake-networkmanager.js';
import { planOf } from '../../src/engine/engine.js';

const { Variant } = dbus;
const INTERNAL_IP = '192.168.127.10/24';

const uplink = () => ({
  connection: {
    id: new Variant('s', 'uplink'),
    uuid: new Variant('s', '5fb06bd0-0bb0-7ffb-45f1-d6edd65f3e03'),
    type: new Variant('s', '802-3-ethernet'),
    'interface-name': new Variant('s', 'ens4'),
    autoconnect: new Variant('b', true),
  },
  '802-3-ethernet': {},
  ipv4: { method: new Variant('s', 'auto') },
  ipv6: { method: new Variant('s', 'disabled') },
  proxy: {},
});

const factory = (): World => ({
  devices: [
    { name: 'lo', type: DeviceType.loopback, managed: false },
    { name: 'ens3', type: DeviceType.ethernet, managed: false, hwAddress: '52:54:00:12:34:56' },
    {
      name: 'ens4',
      type: DeviceType.ethernet,
      hwAddress: '52:54:00:12:34:57',
      lease: { address: '192.0.2.100', prefix: 24, gateway: '192.0.2.1' },
    },
  ],
  profiles: [uplink()],
});

/** the VM's site network: br-ex a Linux bridge over ens4, static addresses, default route, DNS of both families */
const SITE = {
  interfaces: [
    {
      name: 'br-ex',
      type: 'linux-bridge',
      state: 'up',
      bridge: { options: { stp: { enabled: false } }, port: [{ name: 'ens4' }] },
      ipv4: { enabled: true, dhcp: false, address: [{ ip: '192.0.2.10', 'prefix-length': 24 }] },
      ipv6: { enabled: true, dhcp: false, autoconf: false, address: [{ ip: '2001:db8::10', 'prefix-length': 64 }] },
    },
    { name: 'ens4', type: 'ethernet', state: 'up', ipv4: { enabled: false }, ipv6: { enabled: false } },
  ],
  routes: { config: [{ destination: '0.0.0.0/0', 'next-hop-address': '192.0.2.1', 'next-hop-interface': 'br-ex' }] },
  'dns-resolver': { config: { server: ['192.0.2.53', '2001:db8::53'], search: ['vm-store-0007.example.com'] } },
} as NmstateState;
const DESIRED = desiredNetworkState(SITE, INTERNAL_IP);

const lines: Record<string, unknown>[] = [];
const log = createLogger({
  level: 'debug',
  format: 'json',
  journal: false,
  write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
});

let bus: PrivateBus;
let nm: FakeNetworkManager;
let adapter: NetworkManagerNmstate;

const connect = (options: NetworkManagerOptions = {}) => {
  adapter.close();
  adapter = createNetworkManager(log, { activationTimeoutMs: 10_000, ...options });
  return adapter;
};
const members = (calls: Recorded[], ...names: string[]) => calls.filter((c) => names.includes(c.member));
const writes = () =>
  members(
    nm.calls,
    'CheckpointCreate',
    'CheckpointDestroy',
    'CheckpointRollback',
    'AddConnection2',
    'Update2',
    'Delete',
    'ActivateConnection',
    'AutoActivate',
    'Disconnect',
    'Reapply',
  );
const profileIds = () =>
  nm
    .profiles()
    .map((p) => p.settings.connection!.id!.value as string)
    .sort();
const iface = (state: NmstateState, name: string, type?: string) =>
  state.interfaces!.find((i) => i.name === name && (type === undefined || i.type === type));

beforeAll(async () => {
  const missing = missingDbusDaemon();
  if (missing) throw new Error(missing);
  bus = await startPrivateBus();
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
});
afterAll(async () => {
  await bus?.stop();
});
beforeEach(async () => {
  lines.length = 0;
  nm = await FakeNetworkManager.start(bus.address, factory());
  adapter = createNetworkManager(log, { activationTimeoutMs: 10_000 });
});
afterEach(async () => {
  adapter.close();
  await nm.stop();
});

describe('show', () => {
  it('reads the factory network as nmstate: ens3 left alone, ens4 on DHCP with its lease and default route', async () => {
    const state = await adapter.show();
    expect(state.interfaces!.map((i) => [i.name, i.type, i.state])).toEqual([
      ['lo', 'loopback', 'ignore'],
      ['ens3', 'ethernet', 'ignore'],
      ['ens4', 'ethernet', 'up'],
    ]);
    expect(iface(state, 'ens4')).toMatchObject({
      'mac-address': '52:54:00:12:34:57',
      ipv4: { enabled: true, dhcp: true, address: [{ ip: '192.0.2.100', 'prefix-length': 24 }] },
      ipv6: { enabled: false },
    });
    expect((state.routes as { running: unknown[] }).running).toContainEqual({
      destination: '0.0.0.0/0',
      'next-hop-address': '192.0.2.1',
      'next-hop-interface': 'ens4',
      metric: 425,
    });
    expect(compareNetworkState(DESIRED, state, INTERNAL_IP).map((d) => d.path)).toEqual([
      'interfaces[br-ex].state',
      'interfaces[ens4].ipv4.enabled',
      'routes.config[0.0.0.0/0 via 192.0.2.1 dev br-ex]',
      'dns-resolver.config.server',
      'dns-resolver.config.search',
    ]);
    // reading changes nothing
    expect(writes()).toEqual([]);
  });
});

describe('apply, commit', () => {
  it('applies the site network under a checkpoint, leaves ens3 alone, and the state read back is the desired one', async () => {
    const { checkpoint } = await adapter.apply(DESIRED, { timeoutSeconds: 75 });
    expect(checkpoint).toBe('/org/freedesktop/NetworkManager/Checkpoint/1');
    const calls = writes();
    expect(calls.map((c) => `${c.member} ${c.path}`)).toEqual([
      'CheckpointCreate /org/freedesktop/NetworkManager',
      'AddConnection2 /org/freedesktop/NetworkManager/Settings',
      'ActivateConnection /org/freedesktop/NetworkManager',
      'Update2 /org/freedesktop/NetworkManager/Settings/1',
      'ActivateConnection /org/freedesktop/NetworkManager',
    ]);
    expect(calls[0]!.args).toEqual([[], 75, CHECKPOINT_FLAGS]);
    // saved to disk, autoconnect held back so that NetworkManager does not start an activation
    // the agent's own would cut short
    expect([calls[1]!.args.slice(1), calls[3]!.args.slice(1)]).toEqual([
      [SAVE_WITHOUT_AUTOCONNECT, {}],
      [SAVE_WITHOUT_AUTOCONNECT, {}],
    ]);
    expect(SAVE_WITHOUT_AUTOCONNECT).toBe(0x21);
    // the bridge profile with NetworkManager's types: the internal IP first (OVN-Kubernetes takes the
    // first address on br-ex as the node IP), then the site address, gateway, DNS in network byte order
    expect(calls[1]!.args[0]).toEqual({
      connection: {
        id: ['s', 'br-ex'],
        type: ['s', 'bridge'],
        'interface-name': ['s', 'br-ex'],
        autoconnect: ['b', true],
      },
      bridge: { stp: ['b', false] },
      ipv4: {
        method: ['s', 'manual'],
        'address-data': [
          'aa{sv}',
          [
            { address: '192.168.127.10', prefix: 24 },
            { address: '192.0.2.10', prefix: 24 },
          ],
        ],
        gateway: ['s', '192.0.2.1'],
        dns: ['au', [0x350200c0]],
        'dns-search': ['as', ['vm-store-0007.example.com']],
      },
      ipv6: {
        method: ['s', 'manual'],
        'address-data': ['aa{sv}', [{ address: '2001:db8::10', prefix: 64 }]],
        dns: ['aay', [[0x20, 0x01, 0x0d, 0xb8, ...Array<number>(11).fill(0), 0x53]]],
      },
    });
    // the factory uplink profile becomes the bridge port: same id and uuid, no IP settings of its own
    expect(calls[3]!.args[0]).toEqual({
      connection: {
        id: ['s', 'uplink'],
        uuid: ['s', '5fb06bd0-0bb0-7ffb-45f1-d6edd65f3e03'],
        type: ['s', '802-3-ethernet'],
        'interface-name': ['s', 'ens4'],
        autoconnect: ['b', true],
        master: ['s', 'br-ex'],
        'slave-type': ['s', 'bridge'],
      },
      '802-3-ethernet': {},
      proxy: {},
    });
    const ens3 = (await adapter.show()).interfaces!.find((i) => i.name === 'ens3');
    expect(nm.calls.filter((c) => c.args.some((a) => JSON.stringify(a).includes('ens3')))).toEqual([]);
    expect(ens3?.state).toBe('ignore');

    const state = await adapter.show();
    expect(compareNetworkState(DESIRED, state, INTERNAL_IP)).toEqual([]);
    expect(iface(state, 'br-ex')).toMatchObject({
      type: 'linux-bridge',
      state: 'up',
      bridge: { port: [{ name: 'ens4' }] },
    });
    expect(iface(state, 'ens4')).toMatchObject({ state: 'up', controller: 'br-ex' });
    expect(state['dns-resolver']).toEqual({
      config: { server: ['192.0.2.53', '2001:db8::53'], search: ['vm-store-0007.example.com'] },
      running: { server: ['192.0.2.53', '2001:db8::53'], search: ['vm-store-0007.example.com'] },
    });

    await adapter.commit(checkpoint);
    expect(nm.checkpoints()).toEqual([]);
    expect(profileIds()).toEqual(['br-ex', 'uplink']);
  });

  it('keeps a site order with the IPv6 server first, in the profiles and in what runs', async () => {
    const reversed = desiredNetworkState(
      { ...SITE, 'dns-resolver': { config: { server: ['2001:db8::53', '192.0.2.53'] } } } as NmstateState,
      INTERNAL_IP,
    );
    await adapter.commit((await adapter.apply(reversed, { timeoutSeconds: 75 })).checkpoint);
    const state = await adapter.show();
    expect(compareNetworkState(reversed, state, INTERNAL_IP)).toEqual([]);
    expect(state['dns-resolver']!.running).toMatchObject({ server: ['2001:db8::53', '192.0.2.53'] });
  });

  it('applied again, updates the same profiles and adds none', async () => {
    await adapter.commit((await adapter.apply(DESIRED, { timeoutSeconds: 75 })).checkpoint);
    const before = nm.profiles().map((p) => p.path);
    nm.calls.length = 0;
    await adapter.commit((await adapter.apply(DESIRED, { timeoutSeconds: 75 })).checkpoint);
    expect(members(nm.calls, 'AddConnection2', 'Delete')).toEqual([]);
    expect(
      members(nm.calls, 'Update2')
        .map((c) => c.path)
        .sort(),
    ).toEqual([...before].sort());
    expect(compareNetworkState(DESIRED, await adapter.show(), INTERNAL_IP)).toEqual([]);
  });

  it('keeps one profile per interface: another one bound to the same name is deleted', async () => {
    await nm.stop();
    const stale = {
      ...uplink(),
      connection: {
        ...uplink().connection,
        id: new Variant('s', 'Wired connection 1'),
        uuid: new Variant('s', '11111111-2222-4333-8444-555555555555'),
        autoconnect: new Variant('b', false),
      },
    };
    nm = await FakeNetworkManager.start(bus.address, { ...factory(), profiles: [uplink(), stale] });
    connect();
    await adapter.commit((await adapter.apply(DESIRED, { timeoutSeconds: 75 })).checkpoint);
    expect(profileIds()).toEqual(['br-ex', 'uplink']);
  });

  it('replaces a profile of another type bound to the same interface instead of updating it', async () => {
    await nm.stop();
    const dummy = {
      connection: {
        id: new Variant('s', 'br-ex'),
        type: new Variant('s', 'dummy'),
        'interface-name': new Variant('s', 'br-ex'),
        autoconnect: new Variant('b', false),
      },
    };
    nm = await FakeNetworkManager.start(bus.address, { ...factory(), profiles: [uplink(), dummy] });
    connect();
    await adapter.commit((await adapter.apply(DESIRED, { timeoutSeconds: 75 })).checkpoint);
    expect(members(nm.calls, 'Delete').map((c) => c.path)).toEqual(['/org/freedesktop/NetworkManager/Settings/2']);
    expect(nm.profiles().map((p) => [p.settings.connection!.id!.value, p.settings.connection!.type!.value])).toEqual([
      ['uplink', '802-3-ethernet'],
      ['br-ex', 'bridge'],
    ]);
  });

  it('takes down and removes the interfaces the state says, and nothing else', async () => {
    await nm.stop();
    const eth = (name: string) => ({
      connection: {
        id: new Variant('s', name),
        type: new Variant('s', '802-3-ethernet'),
        'interface-name': new Variant('s', name),
      },
      ipv4: { method: new Variant('s', 'auto') },
    });
    nm = await FakeNetworkManager.start(bus.address, {
      devices: [
        ...factory().devices,
        { name: 'eth8', type: DeviceType.ethernet },
        { name: 'eth9', type: DeviceType.ethernet },
      ],
      profiles: [uplink(), eth('eth8'), eth('eth9')],
    });
    connect();
    const { checkpoint } = await adapter.apply(
      {
        interfaces: [
          { name: 'eth8', state: 'down' },
          { name: 'eth9', state: 'absent' },
        ],
      } as NmstateState,
      { timeoutSeconds: 30 },
    );
    await adapter.commit(checkpoint);
    expect(writes().map((c) => c.member)).toEqual([
      'CheckpointCreate',
      'Disconnect',
      'Delete',
      'Disconnect',
      'Update2',
      'CheckpointDestroy',
    ]);
    expect(profileIds()).toEqual(['eth8', 'uplink']);
    // down stays down across a reboot
    expect(
      nm.profiles().find((p) => p.settings.connection!.id!.value === 'eth8')!.settings.connection!.autoconnect,
    ).toEqual(new Variant('b', false));
    const state = await adapter.show();
    expect([iface(state, 'eth8')?.state, iface(state, 'eth9')?.state, iface(state, 'ens4')?.state]).toEqual([
      'down',
      'down',
      'up',
    ]);
  });

  /** ens4 static with a gateway and two more routes, in its factory profile `uplink` */
  const staticUplink = async () => {
    await nm.stop();
    const profile: Settings = uplink();
    profile.ipv4 = {
      method: new Variant('s', 'manual'),
      'address-data': new Variant('aa{sv}', [
        { address: new Variant('s', '192.0.2.10'), prefix: new Variant('u', 24) },
      ]),
      gateway: new Variant('s', '192.0.2.1'),
      'route-data': new Variant('aa{sv}', [
        {
          dest: new Variant('s', '10.9.0.0'),
          prefix: new Variant('u', 16),
          'next-hop': new Variant('s', '192.0.2.254'),
        },
        {
          dest: new Variant('s', '10.10.0.0'),
          prefix: new Variant('u', 16),
          'next-hop': new Variant('s', '192.0.2.254'),
          metric: new Variant('u', 50),
        },
      ]),
    };
    nm = await FakeNetworkManager.start(bus.address, { devices: factory().devices, profiles: [profile] });
    connect();
  };
  const ens4Routes = async () =>
    ((await adapter.show()).routes?.config ?? [])
      .filter((r) => r['next-hop-interface'] === 'ens4')
      .map((r) => `${r.destination} via ${r['next-hop-address']}`)
      .sort();

  it('removes an absent route from an interface the state does not list, and keeps its other routes', async () => {
    await staticUplink();
    const desired = {
      routes: { config: [{ destination: '10.9.0.0/16', 'next-hop-interface': 'ens4', state: 'absent' }] },
    } as NmstateState;
    await adapter.commit((await adapter.apply(desired, { timeoutSeconds: 30 })).checkpoint);
    expect(await ens4Routes()).toEqual(['0.0.0.0/0 via 192.0.2.1', '10.10.0.0/16 via 192.0.2.254']);
    // the device keeps running: the changed profile is reapplied, not activated again
    expect(writes().map((c) => c.member)).toEqual(['CheckpointCreate', 'Update2', 'Reapply', 'CheckpointDestroy']);
    expect(compareNetworkState(desired, await adapter.show())).toEqual([]);
    // the factory profile changed in place, its address kept
    expect(profileIds()).toEqual(['uplink']);
    expect(iface(await adapter.show(), 'ens4')?.ipv4?.address).toEqual([{ ip: '192.0.2.10', 'prefix-length': 24 }]);
  });

  it('an absent route without destination removes every route of its interface, the default route too', async () => {
    await staticUplink();
    const desired = { routes: { config: [{ 'next-hop-interface': 'ens4', state: 'absent' }] } } as NmstateState;
    await adapter.commit((await adapter.apply(desired, { timeoutSeconds: 30 })).checkpoint);
    expect(await ens4Routes()).toEqual([]);
    expect(compareNetworkState(desired, await adapter.show())).toEqual([]);
    expect(iface(await adapter.show(), 'ens4')?.ipv4?.address).toEqual([{ ip: '192.0.2.10', 'prefix-length': 24 }]);
  });

  it('refuses OVS before anything changes, naming the way out', async () => {
    const ovs = {
      interfaces: [{ name: 'br-ex', type: 'ovs-interface', ipv4: { enabled: true, dhcp: true } }],
    } as NmstateState;
    await expect(adapter.apply(ovs, { timeoutSeconds: 30 })).rejects.toThrow(
      /br-ex: type ovs-interface .*SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE=1/,
    );
    expect(writes()).toEqual([]);
  });

  it('declares what it cannot apply, and the network step refuses it at plan, before any step changes the node', async () => {
    const corpus = (name: string) =>
      yaml.load(
        readFileSync(path.join(__dirname, '../fixtures/nmstate-corpus/examples', name), 'utf8'),
      ) as NmstateState;
    expect(adapter.unsupported(corpus('ovsbridge_dpdk_create.yml'))).toEqual([
      'ovs-db: needs nmstatectl',
      expect.stringMatching(/^interfaces\[0\] \(ovs-br0\)\.type: interface ovs-br0: type ovs-bridge is not supported/),
      expect.stringMatching(/^interfaces\[1\] \(ovs0\)\.type: interface ovs0: type ovs-interface is not supported/),
    ]);
    expect(adapter.unsupported(corpus('eth1_add_route_rule.yml'))).toEqual([
      'route-rules: needs nmstatectl',
      'routes.config[0].table-id: needs nmstatectl',
    ]);
    expect(adapter.unsupported(corpus('eth1_add_route.yml'))).toEqual([
      'routes.config[0].source: needs nmstatectl',
      'routes.config[0].table-id: needs nmstatectl',
      'routes.config[0].cwnd: needs nmstatectl',
      'routes.config[1].route-type: needs nmstatectl',
    ]);
    expect(adapter.unsupported(corpus('dns_edit_eth1.yml'))).toEqual(['dns-resolver.config.options: needs nmstatectl']);
    expect(adapter.unsupported(corpus('eth1_with_sriov.yml'))).toEqual([
      'interfaces[0] (eth1).ethernet: needs nmstatectl',
    ]);
    // what the fallback covers: ethernet, bond, VLAN, Linux bridge, DHCP and static, DNS, routes and their removal
    for (const name of [
      'bond_linuxbridge_vlan_up.yml',
      'linuxbrige_eth1_up.yml',
      'vlan101_eth1_up.yml',
      'eth1_del_all_routes.yml',
      'dns_remove.yml',
    ])
      expect(adapter.unsupported(corpus(name)), name).toEqual([]);

    const node = testNode({ site: testSite({ network: { nmstate: corpus('ovsbridge_dpdk_create.yml') } }) });
    node.ctx.nmstate = adapter;
    const plan = await planOf(networkStep, node.ctx);
    expect(plan).toMatchObject({
      action: 'conflict',
      reason: expect.stringContaining(
        'the network backend on this node cannot apply the site network: ovs-db: needs nmstatectl; interfaces[0] (ovs-br0).type',
      ),
    });
    // through the engine, as `run` does: refused in the preflight, before the ssh-keys step ran (no state written)
    await expect(node.run([sshKeysStep, networkStep])).rejects.toBeInstanceOf(RefusedError);
    expect(existsSync(path.join(node.root, 'var/lib/sno-relocate/state.json'))).toBe(false);
    expect(writes()).toEqual([]);
  });

  it('with br-ex as a Linux bridge, applies an OVS site network (examples/store-0042) and finds it settled', async () => {
    const example = path.join(__dirname, '../../examples/store-0042/network.yaml');
    const desired = desiredNetworkState(yaml.load(readFileSync(example, 'utf8')) as NmstateState, INTERNAL_IP);
    const bridged = connect({ brExAsLinuxBridge: true });
    await bridged.commit((await bridged.apply(desired, { timeoutSeconds: 30 })).checkpoint);
    const added = members(nm.calls, 'AddConnection2')[0]!.args[0] as Record<string, Record<string, [string, unknown]>>;
    expect(added.connection!.type).toEqual(['s', 'bridge']);
    const state = await bridged.show();
    expect(compareNetworkState(desired, state, INTERNAL_IP)).toEqual([]);
    expect(iface(state, 'br-ex', 'ovs-interface')?.ipv4).toMatchObject({
      address: [
        { ip: '192.168.127.10', 'prefix-length': 24 },
        { ip: '10.42.0.20', 'prefix-length': 24 },
      ],
    });
    // the port-less bridge leaves the uplink as it was
    expect(iface(state, 'ens4')).toMatchObject({ state: 'up', ipv4: { dhcp: true } });
  });
});

describe('the NetworkManager stand-in', () => {
  it('refuses settings with the wrong variant type, and profiles kept in memory only, as NetworkManager does', async () => {
    const client = dbus.sessionBus({ busAddress: bus.address });
    try {
      const settings = (
        await client.getProxyObject('org.freedesktop.NetworkManager', '/org/freedesktop/NetworkManager/Settings')
      ).getInterface('org.freedesktop.NetworkManager.Settings');
      const profile = (ipv4: Record<string, dbus.Variant>) => ({
        connection: {
          id: new Variant('s', 'x'),
          type: new Variant('s', '802-3-ethernet'),
          'interface-name': new Variant('s', 'ens4'),
        },
        ipv4,
      });
      // DNS servers as dotted strings instead of NetworkManager's `au`
      await expect(
        settings.AddConnection2!(
          profile({ method: new Variant('s', 'auto'), dns: new Variant('as', ['192.0.2.53']) }),
          SAVE_WITHOUT_AUTOCONNECT,
          {},
        ),
      ).rejects.toThrow('ipv4.dns: expected au, got as');
      // a prefix as a string inside address-data
      await expect(
        settings.AddConnection2!(
          profile({
            method: new Variant('s', 'manual'),
            'address-data': new Variant('aa{sv}', [
              { address: new Variant('s', '192.0.2.10'), prefix: new Variant('s', '24') },
            ]),
          }),
          SAVE_WITHOUT_AUTOCONNECT,
          {},
        ),
      ).rejects.toThrow('ipv4.address-data[0].prefix: expected u, got s');
      await expect(settings.AddConnection2!(profile({ method: new Variant('s', 'auto') }), 0x02, {})).rejects.toThrow(
        'exactly one of TO_DISK and IN_MEMORY',
      );
      expect(profileIds()).toEqual(['uplink']);
    } finally {
      client.disconnect();
    }
  });
});

describe('failures and rollback', () => {
  it('a failed activation fails apply with NetworkManager reason, and the checkpoint is rolled back at once', async () => {
    nm.behave({ failActivation: { 'br-ex': 5 } });
    const factoryProfile = signedSettings(nm.profiles()[0]!.settings);
    await expect(adapter.apply(DESIRED, { timeoutSeconds: 75 })).rejects.toThrow(
      /could not activate br-ex: IP_CONFIG_INVALID.*rolled back/,
    );
    expect(members(nm.calls, 'CheckpointRollback')).toHaveLength(1);
    expect(nm.checkpoints()).toEqual([]);
    expect(profileIds()).toEqual(['uplink']);
    expect(signedSettings(nm.profiles()[0]!.settings)).toEqual(factoryProfile);
    const state = await adapter.show();
    expect(iface(state, 'ens4')).toMatchObject({
      state: 'up',
      ipv4: { address: [{ ip: '192.0.2.100', 'prefix-length': 24 }] },
    });
    expect(iface(state, 'br-ex')).toBeUndefined();
  });

  it('a port whose bridge fails is reported too, by its reason', async () => {
    nm.behave({ failActivation: { 'br-ex': 3 } });
    await expect(adapter.apply(DESIRED, { timeoutSeconds: 75 })).rejects.toThrow(
      /could not activate br-ex: DEVICE_DISCONNECTED; NetworkManager could not activate ens4: DEPENDENCY_FAILED; the change was rolled back/,
    );
  });

  it('an activation over before it could be watched is reported by the device state reason', async () => {
    nm.behave({ vanishActivation: { 'br-ex': 5 } });
    await expect(adapter.apply(DESIRED, { timeoutSeconds: 75 })).rejects.toThrow(
      /could not activate br-ex \(device state 30, NMDeviceStateReason 5\).*rolled back/,
    );
  });

  it('rollback restores the factory network and logs each device result', async () => {
    const { checkpoint } = await adapter.apply(DESIRED, { timeoutSeconds: 75 });
    lines.length = 0;
    await adapter.rollback(checkpoint);
    expect(profileIds()).toEqual(['uplink']);
    expect(compareNetworkState(DESIRED, await adapter.show(), INTERNAL_IP)).not.toEqual([]);
    const logged = lines.find((l) => String(l.msg).includes('rolled back checkpoint'));
    expect(logged?.devices).toMatchObject({ ens3: 'OK', ens4: 'OK' });
  });

  it('a device NetworkManager could not roll back is named', async () => {
    const { checkpoint } = await adapter.apply(DESIRED, { timeoutSeconds: 75 });
    nm.behave({ rollbackResults: { ens4: 3 } });
    await expect(adapter.rollback(checkpoint)).rejects.toThrow('NetworkManager could not roll back ens4 (ERR_FAILED)');
  });

  it('commit of a checkpoint that is gone fails with NetworkManager error', async () => {
    await expect(adapter.commit('/org/freedesktop/NetworkManager/Checkpoint/9')).rejects.toThrow(
      /CheckpointDestroy .*org.freedesktop.NetworkManager.InvalidArguments: checkpoint .* does not exist/,
    );
  });

  it('without NetworkManager on the bus, fails naming the service', async () => {
    await nm.stop();
    await expect(adapter.show()).rejects.toThrow(/org.freedesktop.DBus.Error.ServiceUnknown/);
    nm = await FakeNetworkManager.start(bus.address, factory());
  });
});
