/**
 * A small NetworkManager for tests, served with dbus-next on a private bus (test/dbus/bus.ts): the
 * members the agent's D-Bus adapter uses (src/ports/networkmanager.ts), with NetworkManager's
 * names, object paths, signatures and error names. The real NetworkManager cannot run here (it
 * needs the host's network namespace and root); this one models what the adapter relies on and
 * checks what it is given:
 *   - connection settings: every section and key must be one NetworkManager knows, with the
 *     variant type NetworkManager's D-Bus API has for it (a wrong type is refused with
 *     Settings.Connection.InvalidProperty, as NetworkManager does);
 *   - activation: the device is found by interface-name (virtual ones are created), a port needs
 *     its controller's device, the Active object goes ACTIVATING -> ACTIVATED or DEACTIVATED with a
 *     reason through StateChanged, once the client has read its state;
 *   - profiles: saved with AddConnection2/Update2, which must ask for disk; a profile that may
 *     autoconnect is activated by itself unless the call blocks that, as NetworkManager's policy does;
 *   - Reapply: the saved profile's settings applied to the running device, which stays up;
 *   - checkpoints: create (one at a time unless DESTROY_ALL), destroy, rollback (profiles and
 *     devices as they were, new profiles deleted and new devices removed) with per-device results.
 * Profiles are handed out with the legacy `routes` beside `route-data`, and a client that sends
 * both gets the legacy ones kept, as the daemon does.
 * IP configuration follows the applied profile: static addresses, gateway and routes as given,
 * DHCP from a lease the test sets per interface. IPv4 DNS servers are read back from `au` in
 * network byte order, so a wrong byte order shows as a wrong server.
 */
import { canonicalIp } from '../../src/base/addresses.js';
import dbus from 'dbus-next';

const { Interface } = dbus.interface;
const { Variant, DBusError } = dbus;
type Variant = dbus.Variant;
type Settings = Record<string, Record<string, Variant>>;

const NM = 'org.freedesktop.NetworkManager';
const NM_PATH = '/org/freedesktop/NetworkManager';
const SETTINGS_PATH = `${NM_PATH}/Settings`;

/** NMDeviceType */
export const DeviceType = { ethernet: 1, bond: 10, vlan: 11, bridge: 13, dummy: 22, loopback: 32 } as const;
/** NMDeviceState */
const DEVICE = { unmanaged: 10, disconnected: 30, activated: 100 } as const;
/** NMActiveConnectionState */
const ACTIVE = { activating: 1, activated: 2, deactivated: 4 } as const;
const VIRTUAL: Record<string, number> = {
  bridge: DeviceType.bridge,
  bond: DeviceType.bond,
  vlan: DeviceType.vlan,
  dummy: DeviceType.dummy,
};
/** NMActiveConnectionStateReason */
const DEPENDENCY_FAILED = 12;
const CHECKPOINT_DESTROY_ALL = 0x01;
const CHECKPOINT_FLAGS_KNOWN = 0x01 | 0x02 | 0x04 | 0x08 | 0x10;

/** the keys this NetworkManager knows, with their D-Bus types (nm-settings-dbus(5)) */
const KNOWN_KEYS: Record<string, Record<string, string>> = {
  connection: {
    id: 's',
    uuid: 's',
    type: 's',
    'interface-name': 's',
    autoconnect: 'b',
    master: 's',
    'slave-type': 's',
    timestamp: 't',
  },
  '802-3-ethernet': { mtu: 'u', 'mac-address': 'ay', 'auto-negotiate': 'b' },
  bridge: { stp: 'b', priority: 'u' },
  vlan: { parent: 's', id: 'u', flags: 'u' },
  bond: { options: 'a{ss}' },
  ipv4: {
    method: 's',
    'address-data': 'aa{sv}',
    addresses: 'aau',
    gateway: 's',
    'route-data': 'aa{sv}',
    routes: 'aau',
    dns: 'au',
    'dns-search': 'as',
    'ignore-auto-dns': 'b',
    'dns-priority': 'i',
  },
  ipv6: {
    method: 's',
    'address-data': 'aa{sv}',
    addresses: 'a(ayuay)',
    gateway: 's',
    'route-data': 'aa{sv}',
    routes: 'a(ayuayu)',
    dns: 'aay',
    'dns-search': 'as',
    'ignore-auto-dns': 'b',
    'dns-priority': 'i',
    'addr-gen-mode': 'i',
  },
  proxy: {},
};
const ADDRESS_KEYS: Record<string, string> = { address: 's', prefix: 'u' };
const ROUTE_KEYS: Record<string, string> = { dest: 's', prefix: 'u', 'next-hop': 's', metric: 'u' };
const METHODS: Record<string, string[]> = {
  ipv4: ['auto', 'manual', 'disabled', 'link-local', 'shared'],
  ipv6: ['auto', 'dhcp', 'manual', 'ignore', 'disabled', 'link-local', 'shared'],
};
const TYPES = ['802-3-ethernet', 'bridge', 'bond', 'vlan', 'dummy', 'loopback'];

/** NM_SETTINGS_ADD_CONNECTION2_FLAG_* and NM_SETTINGS_UPDATE2_FLAG_* share these bits */
const TO_DISK = 0x01;
const IN_MEMORY = 0x02;
const BLOCK_AUTOCONNECT = 0x20;

/** the agent's profiles must survive a reboot: saved to disk, never in memory only */
function checkSaveFlags(flags: number, args: Record<string, Variant>): void {
  if (!(flags & TO_DISK) || flags & IN_MEMORY)
    throw new DBusError(
      'org.freedesktop.NetworkManager.Settings.InvalidArguments',
      `flags ${flags}: exactly one of TO_DISK and IN_MEMORY`,
    );
  if (Object.keys(args).length > 0)
    throw new DBusError(
      'org.freedesktop.NetworkManager.Settings.InvalidArguments',
      `unexpected args ${Object.keys(args).join(', ')}`,
    );
}

const invalid = (what: string) =>
  new DBusError('org.freedesktop.NetworkManager.Settings.Connection.InvalidProperty', what);

function checkEntries(where: string, entries: unknown, keys: Record<string, string>, required: string[]): void {
  if (!Array.isArray(entries)) throw invalid(`${where}: not a list`);
  for (const [i, entry] of entries.entries()) {
    for (const [key, value] of Object.entries(entry as Record<string, unknown>)) {
      if (!(value instanceof Variant) || value.signature !== keys[key])
        throw invalid(
          `${where}[${i}].${key}: expected ${keys[key] ?? 'no such key'}, got ${value instanceof Variant ? value.signature : typeof value}`,
        );
    }
    for (const key of required) if (!(key in (entry as object))) throw invalid(`${where}[${i}]: ${key} missing`);
  }
}

/** NetworkManager's checks on settings it is given, as far as the adapter's subset goes */
export function checkSettings(settings: Settings): void {
  for (const [section, keys] of Object.entries(settings)) {
    const known = KNOWN_KEYS[section];
    if (!known) throw invalid(`${section}: unknown setting`);
    for (const [key, value] of Object.entries(keys)) {
      if (!(value instanceof Variant)) throw invalid(`${section}.${key}: not a variant`);
      if (known[key] !== value.signature)
        throw invalid(`${section}.${key}: expected ${known[key] ?? 'no such property'}, got ${value.signature}`);
    }
    if (keys['address-data'])
      checkEntries(`${section}.address-data`, keys['address-data'].value, ADDRESS_KEYS, ['address', 'prefix']);
    if (keys['route-data'])
      checkEntries(`${section}.route-data`, keys['route-data'].value, ROUTE_KEYS, ['dest', 'prefix']);
    const method = keys.method?.value as string | undefined;
    if (method !== undefined && !METHODS[section]!.includes(method))
      throw invalid(`${section}.method: invalid method ${method}`);
  }
  const connection = settings.connection;
  if (!connection?.id || !connection.type) throw invalid('connection: id and type are required');
  if (!TYPES.includes(connection.type.value as string))
    throw invalid(`connection.type: unknown type ${connection.type.value as string}`);
  if (settings.ipv4?.method?.value === 'manual' && !settings.ipv4['address-data'])
    throw invalid('ipv4.method: manual needs addresses');
}

/** an IPv4 address in NetworkManager's legacy `au`/`aau` form: the bytes in network order */
const toNetworkOrder = (ip: string) =>
  ip
    .split('.')
    .map(Number)
    .reduceRight((n, byte) => ((n << 8) | byte) >>> 0, 0);
const toBytes = (ip: string) => {
  const [head = '', tail = ''] = canonicalIp(ip).split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.from(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
};

/**
 * The legacy `routes` beside `route-data`, as the daemon hands a profile out (GetSettings): ipv4
 * `aau` (destination, prefix, next hop, metric; addresses in network order), ipv6 `a(ayuayu)`.
 */
function withLegacyRoutes(settings: Settings): Settings {
  const out = clone(settings);
  for (const family of [4, 6] as const) {
    const section = out[family === 4 ? 'ipv4' : 'ipv6'];
    const data = (section?.['route-data']?.value ?? []) as Record<string, Variant>[];
    if (!section || data.length === 0) continue;
    const zero = family === 4 ? '0.0.0.0' : '::';
    const rows = data.map((r) => {
      const hop = str(r['next-hop']) ?? zero;
      const metric = (r.metric?.value as number | undefined) ?? 0;
      const prefix = r.prefix!.value as number;
      return family === 4
        ? [toNetworkOrder(str(r.dest)!), prefix, toNetworkOrder(hop), metric]
        : [toBytes(str(r.dest)!), prefix, toBytes(hop), metric];
    });
    section.routes = new Variant(family === 4 ? 'aau' : 'a(ayuayu)', rows);
  }
  return out;
}

/**
 * What the daemon keeps of settings it is given: when a client sends the legacy `routes` too, the
 * daemon reads that and ignores `route-data` (libnm-core nm-setting.c _nm_setting_use_legacy_property:
 * "The daemon prefers the legacy property if it exists"; nm-setting-ip4-config.c ip4_route_data_set).
 */
function fromClient(settings: Settings): Settings {
  const out = clone(settings);
  for (const family of [4, 6] as const) {
    const section = out[family === 4 ? 'ipv4' : 'ipv6'];
    const legacy = section?.routes?.value as unknown[][] | undefined;
    if (!section || !legacy) continue;
    const ip = (v: unknown) => (family === 4 ? fromNetworkOrder(v as number) : fromBytes(v as Buffer));
    const none = family === 4 ? '0.0.0.0' : '::';
    section['route-data'] = new Variant(
      'aa{sv}',
      legacy.map(([dest, prefix, hop, metric]) => ({
        dest: new Variant('s', ip(dest)),
        prefix: new Variant('u', prefix as number),
        ...(ip(hop) !== none ? { 'next-hop': new Variant('s', ip(hop)) } : {}),
        ...((metric as number) > 0 ? { metric: new Variant('u', metric as number) } : {}),
      })),
    );
    delete section.routes;
  }
  return out;
}

const clone = (settings: Settings): Settings =>
  Object.fromEntries(Object.entries(settings).map(([s, keys]) => [s, { ...keys }]));
const str = (v: Variant | undefined) => v?.value as string | undefined;

/** an IPv4 address from NetworkManager's `au` form: the bytes in network order */
const fromNetworkOrder = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff].join('.');
const fromBytes = (b: Buffer) =>
  canonicalIp(Array.from({ length: 8 }, (_, i) => b.readUInt16BE(2 * i).toString(16)).join(':'));

export interface Lease {
  address: string;
  prefix: number;
  gateway: string;
  dns?: string[];
}

export interface FakeDevice {
  name: string;
  type: number;
  hwAddress?: string;
  /** false: NetworkManager leaves the device alone (another network stack has it) */
  managed?: boolean;
  /** what DHCP hands this device */
  lease?: Lease;
}

export interface World {
  devices: FakeDevice[];
  /** saved profiles; those with autoconnect and a matching device are active at start */
  profiles: Settings[];
}

export interface Behaviour {
  /** interface -> NMActiveConnectionStateReason: its activation fails with that reason */
  failActivation?: Record<string, number>;
  /**
   * interface -> NMDeviceStateReason: its activation is over before ActivateConnection returns,
   * the Active object already gone
   */
  vanishActivation?: Record<string, number>;
  /** interface -> NMRollbackResult reported for it by CheckpointRollback */
  rollbackResults?: Record<string, number>;
}

export interface Recorded {
  member: string;
  path: string;
  args: unknown[];
}

interface Profile {
  path: string;
  settings: Settings;
}

interface DeviceRecord {
  path: string;
  /** its IP4Config and IP6Config objects */
  ipPaths: [string, string];
  spec: FakeDevice;
  state: number;
  applied?: Settings;
  active?: ActiveRecord;
  /** NMDeviceStateReason of the last state change */
  reason?: number;
}

interface ActiveRecord {
  path: string;
  state: number;
  profile: Profile;
  device: DeviceRecord;
  iface: ActiveInterface;
  /** runs the pending outcome once the client has looked */
  settle?: () => void;
}

interface Snapshot {
  profiles: Profile[];
  devices: { device: DeviceRecord; state: number; profile?: Profile }[];
}

/** what a value looks like on the wire: [signature, plain value] per key */
export function signedSettings(settings: Settings): Record<string, Record<string, [string, unknown]>> {
  const unwrap = (v: unknown): unknown =>
    v instanceof Variant
      ? unwrap(v.value)
      : Buffer.isBuffer(v)
        ? [...v]
        : Array.isArray(v)
          ? v.map(unwrap)
          : v && typeof v === 'object'
            ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, unwrap(x)]))
            : v;
  return Object.fromEntries(
    Object.entries(settings).map(([s, keys]) => [
      s,
      Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, [v.signature, unwrap(v)]])),
    ]),
  );
}

class ActiveInterface extends Interface {
  constructor(private readonly record: () => ActiveRecord) {
    super('org.freedesktop.NetworkManager.Connection.Active');
  }
  get State() {
    const active = this.record();
    // the outcome comes after the client has seen ACTIVATING, as on a node where activation takes time
    if (active.settle) setImmediate(active.settle);
    return active.state;
  }
  get Connection() {
    return this.record().profile.path;
  }
  get Id() {
    return str(this.record().profile.settings.connection!.id) ?? '';
  }
  get Devices() {
    return [this.record().device.path];
  }
  StateChanged(state: number, reason: number) {
    return [state, reason];
  }
}
ActiveInterface.configureMembers({
  properties: {
    State: { signature: 'u', access: 'read' },
    Connection: { signature: 'o', access: 'read' },
    Id: { signature: 's', access: 'read' },
    Devices: { signature: 'ao', access: 'read' },
  },
  signals: { StateChanged: { signature: 'uu' } },
});

/** the IP configuration of a device as IP4Config/IP6Config show it */
class IpConfigInterface extends Interface {
  constructor(
    private readonly nm: FakeNetworkManager,
    private readonly device: DeviceRecord,
    private readonly family: 4 | 6,
  ) {
    super(`org.freedesktop.NetworkManager.IP${family}Config`);
  }
  get AddressData() {
    return this.nm.ipData(this.device, this.family).addresses.map((a) => ({
      address: new Variant('s', a.address),
      prefix: new Variant('u', a.prefix),
    }));
  }
  get RouteData() {
    return this.nm.ipData(this.device, this.family).routes.map((r) => ({
      dest: new Variant('s', r.dest),
      prefix: new Variant('u', r.prefix),
      ...(r['next-hop'] ? { 'next-hop': new Variant('s', r['next-hop']) } : {}),
      metric: new Variant('u', r.metric),
    }));
  }
  get Gateway() {
    return this.nm.ipData(this.device, this.family).gateway;
  }
}
IpConfigInterface.configureMembers({
  properties: {
    AddressData: { signature: 'aa{sv}', access: 'read' },
    RouteData: { signature: 'aa{sv}', access: 'read' },
    Gateway: { signature: 's', access: 'read' },
  },
});

class DeviceInterface extends Interface {
  constructor(
    private readonly nm: FakeNetworkManager,
    private readonly device: DeviceRecord,
  ) {
    super('org.freedesktop.NetworkManager.Device');
  }
  get Interface() {
    return this.device.spec.name;
  }
  get DeviceType() {
    return this.device.spec.type;
  }
  get State() {
    return this.device.state;
  }
  get HwAddress() {
    return this.device.spec.hwAddress ?? '';
  }
  get Mtu() {
    return (this.device.applied?.['802-3-ethernet']?.mtu?.value as number | undefined) ?? 1500;
  }
  get Ip4Config() {
    return this.device.state === DEVICE.activated ? this.device.ipPaths[0] : '/';
  }
  get Ip6Config() {
    return this.device.state === DEVICE.activated ? this.device.ipPaths[1] : '/';
  }
  get ActiveConnection() {
    return this.device.active?.path ?? '/';
  }
  get StateReason() {
    return [this.device.state, this.device.reason ?? 0];
  }
  GetAppliedConnection(flags: number) {
    this.nm.record(this.device.path, 'GetAppliedConnection', flags);
    if (!this.device.applied)
      throw new DBusError('org.freedesktop.NetworkManager.Device.NotActive', 'Device is not activated');
    return [this.device.applied, 1n];
  }
  /** the saved profile's settings applied again to the running device (empty `settings`: as saved) */
  Reapply(settings: Settings, versionId: bigint, flags: number) {
    this.nm.record(this.device.path, 'Reapply', signedSettings(settings), versionId, flags);
    const active = this.device.active;
    if (this.device.state !== DEVICE.activated || !active)
      throw new DBusError('org.freedesktop.NetworkManager.Device.NotActive', 'Device is not activated');
    if (Object.keys(settings).length > 0)
      throw new DBusError(
        'org.freedesktop.NetworkManager.Device.Failed',
        'this test NetworkManager reapplies the saved profile only',
      );
    this.device.applied = clone(active.profile.settings);
  }
  Disconnect() {
    this.nm.record(this.device.path, 'Disconnect');
    if (this.device.state !== DEVICE.activated)
      throw new DBusError('org.freedesktop.NetworkManager.Device.NotActive', 'This device is not active');
    this.nm.deactivate(this.device);
  }
}
DeviceInterface.configureMembers({
  properties: {
    Interface: { signature: 's', access: 'read' },
    DeviceType: { signature: 'u', access: 'read' },
    State: { signature: 'u', access: 'read' },
    HwAddress: { signature: 's', access: 'read' },
    Mtu: { signature: 'u', access: 'read' },
    Ip4Config: { signature: 'o', access: 'read' },
    Ip6Config: { signature: 'o', access: 'read' },
    ActiveConnection: { signature: 'o', access: 'read' },
    StateReason: { signature: '(uu)', access: 'read' },
  },
  methods: {
    GetAppliedConnection: { inSignature: 'u', outSignature: 'a{sa{sv}}t' },
    Reapply: { inSignature: 'a{sa{sv}}tu' },
    Disconnect: {},
  },
});

class SettingsConnection extends Interface {
  constructor(
    private readonly nm: FakeNetworkManager,
    private readonly profile: Profile,
  ) {
    super('org.freedesktop.NetworkManager.Settings.Connection');
  }
  GetSettings() {
    this.nm.record(this.profile.path, 'GetSettings');
    return withLegacyRoutes(this.profile.settings);
  }
  Update2(settings: Settings, flags: number, args: Record<string, Variant>) {
    this.nm.record(this.profile.path, 'Update2', signedSettings(settings), flags, args);
    checkSettings(settings);
    checkSaveFlags(flags, args);
    if (!settings.connection!.uuid) throw invalid('connection.uuid: an update must keep the uuid');
    this.profile.settings = fromClient(settings);
    // a modified profile that may autoconnect is eligible at once, unless blocked
    if (!(flags & BLOCK_AUTOCONNECT)) this.nm.autoconnect(this.profile);
    return {};
  }
  Delete() {
    this.nm.record(this.profile.path, 'Delete');
    this.nm.deleteProfile(this.profile);
  }
}
SettingsConnection.configureMembers({
  methods: {
    GetSettings: { outSignature: 'a{sa{sv}}' },
    Update2: { inSignature: 'a{sa{sv}}ua{sv}', outSignature: 'a{sv}' },
    Delete: {},
  },
});

class SettingsInterface extends Interface {
  constructor(private readonly nm: FakeNetworkManager) {
    super('org.freedesktop.NetworkManager.Settings');
  }
  ListConnections() {
    this.nm.record(SETTINGS_PATH, 'ListConnections');
    return this.nm.profiles().map((p) => p.path);
  }
  AddConnection2(settings: Settings, flags: number, args: Record<string, Variant>) {
    this.nm.record(SETTINGS_PATH, 'AddConnection2', signedSettings(settings), flags, args);
    checkSaveFlags(flags, args);
    const profile = this.nm.addProfile(settings);
    if (!(flags & BLOCK_AUTOCONNECT)) this.nm.autoconnect(profile);
    return [profile.path, {}];
  }
}
SettingsInterface.configureMembers({
  methods: {
    ListConnections: { outSignature: 'ao' },
    AddConnection2: { inSignature: 'a{sa{sv}}ua{sv}', outSignature: 'oa{sv}' },
  },
});

class Manager extends Interface {
  constructor(private readonly nm: FakeNetworkManager) {
    super(NM);
  }
  get Version() {
    return '1.42.4';
  }
  GetDevices() {
    this.nm.record(NM_PATH, 'GetDevices');
    return this.nm.devices.map((d) => d.path);
  }
  ActivateConnection(connection: string, device: string, specific: string) {
    this.nm.record(NM_PATH, 'ActivateConnection', connection, device, specific);
    if (device !== '/' || specific !== '/')
      throw new DBusError(
        'org.freedesktop.NetworkManager.UnknownDevice',
        'this test NetworkManager picks the device itself',
      );
    return this.nm.activateByClient(connection);
  }
  CheckpointCreate(paths: string[], timeout: number, flags: number) {
    this.nm.record(NM_PATH, 'CheckpointCreate', paths, timeout, flags);
    return this.nm.createCheckpoint(paths, flags);
  }
  CheckpointDestroy(path: string) {
    this.nm.record(NM_PATH, 'CheckpointDestroy', path);
    this.nm.takeCheckpoint(path);
  }
  CheckpointRollback(path: string) {
    this.nm.record(NM_PATH, 'CheckpointRollback', path);
    return this.nm.rollback(this.nm.takeCheckpoint(path));
  }
}
Manager.configureMembers({
  properties: { Version: { signature: 's', access: 'read' } },
  methods: {
    GetDevices: { outSignature: 'ao' },
    ActivateConnection: { inSignature: 'ooo', outSignature: 'o' },
    CheckpointCreate: { inSignature: 'aouu', outSignature: 'o' },
    CheckpointDestroy: { inSignature: 'o' },
    CheckpointRollback: { inSignature: 'o', outSignature: 'a{su}' },
  },
});

class DnsManager extends Interface {
  constructor(private readonly nm: FakeNetworkManager) {
    super('org.freedesktop.NetworkManager.DnsManager');
  }
  /** one entry per profile and family, strongest priority first, as NetworkManager writes resolv.conf */
  get Configuration() {
    const priority = (section: Record<string, Variant> | undefined) =>
      (section?.['dns-priority']?.value as number | undefined) || 100;
    return this.nm.devices
      .filter((d) => d.state === DEVICE.activated)
      .flatMap((d) => {
        const ipv4 = d.applied?.ipv4;
        const leased =
          ipv4?.method?.value === 'auto' && !ipv4['ignore-auto-dns']?.value ? (d.spec.lease?.dns ?? []) : [];
        const v4 = [...((ipv4?.dns?.value ?? []) as number[]).map(fromNetworkOrder), ...leased];
        const v6 = ((d.applied?.ipv6?.dns?.value ?? []) as Buffer[]).map(fromBytes);
        const domains = [
          ...((ipv4?.['dns-search']?.value ?? []) as string[]),
          ...((d.applied?.ipv6?.['dns-search']?.value ?? []) as string[]),
        ];
        return [
          { servers: v4, priority: priority(ipv4) },
          { servers: v6, priority: priority(d.applied?.ipv6) },
        ]
          .filter((e) => e.servers.length > 0)
          .map((e) => ({ ...e, domains, name: d.spec.name }));
      })
      .sort((a, b) => a.priority - b.priority)
      .map((e) => ({
        nameservers: new Variant('as', e.servers),
        domains: new Variant('as', e.domains),
        interface: new Variant('s', e.name),
        priority: new Variant('i', e.priority),
      }));
  }
}
DnsManager.configureMembers({ properties: { Configuration: { signature: 'aa{sv}', access: 'read' } } });

/**
 * The NetworkManager daemon: its devices, saved profiles, activations and checkpoints, served on a
 * bus under NetworkManager's name by the interface classes above.
 */
export class FakeNetworkManager {
  /** method calls received, in order */
  readonly calls: Recorded[] = [];
  readonly devices: DeviceRecord[] = [];
  private behaviour: Behaviour = {};
  private saved: Profile[] = [];
  private readonly snapshots = new Map<string, Snapshot>();
  private readonly serial = { profile: 0, device: 0, active: 0, ip: 0, checkpoint: 0 };
  private readonly exported = new Map<string, dbus.interface.Interface[]>();
  /** ports whose activation waits for their controller's, by the controller's device */
  private readonly waiting = new Map<DeviceRecord, ActiveRecord[]>();

  private constructor(private readonly bus: dbus.MessageBus) {}

  /** NetworkManager on the bus at `address`, with the world's devices and profiles (autoconnected) */
  static async start(address: string, world: World): Promise<FakeNetworkManager> {
    const bus = dbus.sessionBus({ busAddress: address });
    bus.on('error', () => undefined);
    const nm = new FakeNetworkManager(bus);
    nm.put(NM_PATH, new Manager(nm));
    nm.put(SETTINGS_PATH, new SettingsInterface(nm));
    nm.put(`${NM_PATH}/DnsManager`, new DnsManager(nm));
    for (const spec of world.devices) nm.addDevice(spec);
    for (const settings of world.profiles) {
      const profile = nm.addProfile(settings);
      const device = nm.devices.find((d) => d.spec.name === str(settings.connection!['interface-name']));
      if (
        device &&
        device.state !== DEVICE.unmanaged &&
        settings.connection!.autoconnect?.value !== false &&
        !device.active
      )
        nm.settle(nm.activate(profile));
    }
    await bus.requestName(NM, dbus.NameFlag.DO_NOT_QUEUE);
    return nm;
  }

  behave(behaviour: Behaviour): void {
    this.behaviour = behaviour;
  }

  /** the saved profiles as the settings plugin holds them */
  profiles(): Profile[] {
    return this.saved.map((p) => ({ path: p.path, settings: p.settings }));
  }

  /** the open checkpoints */
  checkpoints(): string[] {
    return [...this.snapshots.keys()];
  }

  async stop(): Promise<void> {
    this.bus.disconnect();
  }

  record(path: string, member: string, ...args: unknown[]): void {
    this.calls.push({ member, path, args });
  }

  private put(path: string, iface: dbus.interface.Interface): void {
    this.bus.export(path, iface);
    this.exported.set(path, [...(this.exported.get(path) ?? []), iface]);
  }

  private drop(path: string): void {
    for (const iface of this.exported.get(path) ?? []) this.bus.unexport(path, iface);
    this.exported.delete(path);
  }

  private profileAt(path: string): Profile {
    const p = this.saved.find((x) => x.path === path);
    if (!p)
      throw new DBusError('org.freedesktop.NetworkManager.Settings.InvalidConnection', `no connection at ${path}`);
    return p;
  }

  /** the IP configuration a device runs with: its applied profile, its DHCP lease */
  ipData(device: DeviceRecord, family: 4 | 6) {
    const section = device.applied?.[family === 4 ? 'ipv4' : 'ipv6'];
    const method = str(section?.method);
    const addresses: { address: string; prefix: number }[] = [];
    const routes: { dest: string; prefix: number; 'next-hop'?: string; metric: number }[] = [];
    let gateway = '';
    if (method === 'manual') {
      for (const a of (section!['address-data']?.value ?? []) as Record<string, Variant>[])
        addresses.push({ address: a.address!.value as string, prefix: a.prefix!.value as number });
      gateway = str(section!.gateway) ?? '';
    }
    const lease = device.spec.lease;
    if (method === 'auto' && family === 4 && lease) {
      addresses.push({ address: lease.address, prefix: lease.prefix });
      gateway = lease.gateway;
    }
    if (gateway) routes.push({ dest: family === 4 ? '0.0.0.0' : '::', prefix: 0, 'next-hop': gateway, metric: 425 });
    for (const r of (section?.['route-data']?.value ?? []) as Record<string, Variant>[]) {
      routes.push({
        dest: r.dest!.value as string,
        prefix: r.prefix!.value as number,
        ...(r['next-hop'] ? { 'next-hop': r['next-hop'].value as string } : {}),
        metric: (r.metric?.value as number | undefined) ?? 425,
      });
    }
    return { addresses, routes, gateway };
  }

  private addDevice(spec: FakeDevice): DeviceRecord {
    const device: DeviceRecord = {
      path: `${NM_PATH}/Devices/${++this.serial.device}`,
      spec,
      state: spec.managed === false ? DEVICE.unmanaged : DEVICE.disconnected,
      ipPaths: [`${NM_PATH}/IP4Config/${++this.serial.ip}`, `${NM_PATH}/IP6Config/${++this.serial.ip}`],
    };
    this.devices.push(device);
    this.put(device.path, new DeviceInterface(this, device));
    this.put(device.ipPaths[0], new IpConfigInterface(this, device, 4));
    this.put(device.ipPaths[1], new IpConfigInterface(this, device, 6));
    return device;
  }

  private removeDevice(device: DeviceRecord): void {
    this.devices.splice(this.devices.indexOf(device), 1);
    this.drop(device.path);
    for (const p of device.ipPaths) this.drop(p);
  }

  deactivate(device: DeviceRecord): void {
    if (device.active) this.drop(device.active.path);
    device.active = undefined;
    device.applied = undefined;
    device.state = DEVICE.disconnected;
  }

  private releasePorts(controller: DeviceRecord, outcome: (port: ActiveRecord) => void): void {
    const ports = this.waiting.get(controller) ?? [];
    this.waiting.delete(controller);
    ports.forEach(outcome);
  }

  private fail(active: ActiveRecord, reason: number): void {
    active.settle = undefined;
    active.state = ACTIVE.deactivated;
    active.iface.StateChanged(ACTIVE.deactivated, reason);
    this.deactivate(active.device);
    this.releasePorts(active.device, (port) => this.fail(port, DEPENDENCY_FAILED));
  }

  private settle(active: ActiveRecord): void {
    active.settle = undefined;
    const controllerName = str(active.profile.settings.connection!.master);
    if (controllerName !== undefined) {
      const controller = this.devices.find((d) => d.spec.name === controllerName);
      if (controller?.active?.state === ACTIVE.activating) {
        this.waiting.set(controller, [...(this.waiting.get(controller) ?? []), active]);
        return;
      }
      // NetworkManager would bring the controller up itself; the adapter must not rely on that
      if (controller?.state !== DEVICE.activated) return this.fail(active, DEPENDENCY_FAILED);
    }
    const reason = this.behaviour.failActivation?.[active.device.spec.name];
    if (reason !== undefined) return this.fail(active, reason);
    active.state = ACTIVE.activated;
    active.device.state = DEVICE.activated;
    active.device.applied = clone(active.profile.settings);
    active.iface.StateChanged(ACTIVE.activated, 1);
    this.releasePorts(active.device, (port) => this.settle(port));
  }

  private activate(profile: Profile): ActiveRecord {
    const name = str(profile.settings.connection!['interface-name']);
    const type = str(profile.settings.connection!.type)!;
    let device = this.devices.find((d) => d.spec.name === name);
    if (!device && name && VIRTUAL[type] !== undefined) device = this.addDevice({ name, type: VIRTUAL[type] });
    if (!device)
      throw new DBusError(
        'org.freedesktop.NetworkManager.UnknownDevice',
        `No suitable device found for this connection (device ${name ?? '(none)'} not available)`,
      );
    if (device.state === DEVICE.unmanaged)
      throw new DBusError(
        'org.freedesktop.NetworkManager.UnknownDevice',
        `Device '${device.spec.name}' is not managed by NetworkManager`,
      );
    this.deactivate(device);
    const path = `${NM_PATH}/ActiveConnection/${++this.serial.active}`;
    const active: ActiveRecord = {
      path,
      state: ACTIVE.activating,
      profile,
      device,
      iface: new ActiveInterface(() => active),
    };
    active.settle = () => this.settle(active);
    device.active = active;
    this.put(path, active.iface);
    return active;
  }

  /** ActivateConnection: the activation's path; its outcome comes once the client has looked */
  activateByClient(connection: string): string {
    const active = this.activate(this.profileAt(connection));
    const vanish = this.behaviour.vanishActivation?.[active.device.spec.name];
    if (vanish !== undefined) {
      this.deactivate(active.device);
      active.device.reason = vanish;
    }
    return active.path;
  }

  /** NetworkManager's policy: a profile that may autoconnect comes up on its idle device by itself */
  autoconnect(profile: Profile): void {
    if (profile.settings.connection!.autoconnect?.value === false) return;
    const name = str(profile.settings.connection!['interface-name']);
    const device = this.devices.find((d) => d.spec.name === name);
    const virtual = VIRTUAL[str(profile.settings.connection!.type)!] !== undefined;
    if ((device && device.state === DEVICE.disconnected) || (!device && virtual)) {
      this.record(NM_PATH, 'AutoActivate', profile.path);
      this.settle(this.activate(profile));
    }
  }

  private exportProfile(profile: Profile): void {
    this.put(profile.path, new SettingsConnection(this, profile));
  }

  addProfile(settings: Settings): Profile {
    checkSettings(settings);
    const withUuid = fromClient(settings);
    withUuid.connection!.uuid ??= new Variant(
      's',
      `00000000-0000-4000-8000-${String(this.serial.profile + 1).padStart(12, '0')}`,
    );
    const profile = { path: `${SETTINGS_PATH}/${++this.serial.profile}`, settings: withUuid };
    this.saved.push(profile);
    this.exportProfile(profile);
    return profile;
  }

  deleteProfile(profile: Profile): void {
    const device = this.devices.find((d) => d.active?.profile === profile);
    if (device) this.deactivate(device);
    this.saved = this.saved.filter((p) => p !== profile);
    this.drop(profile.path);
  }

  createCheckpoint(paths: string[], flags: number): string {
    if ((flags & ~CHECKPOINT_FLAGS_KNOWN) !== 0)
      throw new DBusError('org.freedesktop.NetworkManager.InvalidArguments', `unknown checkpoint flags ${flags}`);
    if (this.snapshots.size > 0 && !(flags & CHECKPOINT_DESTROY_ALL))
      throw new DBusError(
        'org.freedesktop.NetworkManager.InvalidArguments',
        'a checkpoint for the devices already exists',
      );
    if (paths.length > 0)
      throw new DBusError(
        'org.freedesktop.NetworkManager.InvalidArguments',
        'this test NetworkManager checkpoints all devices only',
      );
    this.snapshots.clear();
    const path = `${NM_PATH}/Checkpoint/${++this.serial.checkpoint}`;
    this.snapshots.set(path, {
      profiles: this.saved.map((p) => ({ path: p.path, settings: clone(p.settings) })),
      devices: this.devices.map((d) => ({
        device: d,
        state: d.state,
        ...(d.active ? { profile: d.active.profile } : {}),
      })),
    });
    return path;
  }

  /** a checkpoint, which is then gone (destroyed or rolled back) */
  takeCheckpoint(path: string): Snapshot {
    const snap = this.snapshots.get(path);
    if (!snap)
      throw new DBusError('org.freedesktop.NetworkManager.InvalidArguments', `checkpoint ${path} does not exist`);
    this.snapshots.delete(path);
    return snap;
  }

  rollback(snap: Snapshot): Record<string, number> {
    for (const p of this.saved) if (!snap.profiles.some((s) => s.path === p.path)) this.drop(p.path);
    this.saved = snap.profiles.map((s) => this.saved.find((p) => p.path === s.path) ?? s);
    for (const s of snap.profiles) {
      const live = this.saved.find((p) => p.path === s.path)!;
      live.settings = s.settings;
      // a profile deleted since the checkpoint comes back
      if (!this.exported.has(live.path)) this.exportProfile(live);
    }
    // devices the change created are disconnected, and software devices go with that
    for (const d of [...this.devices]) if (!snap.devices.some((s) => s.device === d)) this.removeDevice(d);
    const results: Record<string, number> = {};
    for (const s of snap.devices) {
      this.deactivate(s.device);
      if (s.state === DEVICE.activated && s.profile) {
        this.settle(this.activate(this.saved.find((p) => p.path === s.profile!.path)!));
      } else {
        s.device.state = s.state;
      }
      results[s.device.path] = this.behaviour.rollbackResults?.[s.device.spec.name] ?? 0;
    }
    return results;
  }
}
