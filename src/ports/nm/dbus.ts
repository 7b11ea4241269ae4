/**
 * NetworkManager's D-Bus API as the adapter uses it: its objects introspected once each, properties
 * and methods called with a bound on each round trip, devices and saved profiles read, activations
 * waited for, checkpoints rolled back with a per-device result.
 */
import type dbus from 'dbus-next';
import type { Logger } from '../../log/logger.js';
import { bounded, connectSystemBus, PROPERTIES, type SystemBus } from '../system-bus.js';
import type { DeviceData, IpConfigData } from './current-state.js';
import { plain, type PlainSettings, type Settings } from './encoding.js';

export const NM = 'org.freedesktop.NetworkManager';
export const NM_PATH = '/org/freedesktop/NetworkManager';
export const SETTINGS_PATH = '/org/freedesktop/NetworkManager/Settings';
export const SETTINGS = 'org.freedesktop.NetworkManager.Settings';
export const CONNECTION = 'org.freedesktop.NetworkManager.Settings.Connection';
export const DEVICE = 'org.freedesktop.NetworkManager.Device';
const ACTIVE = 'org.freedesktop.NetworkManager.Connection.Active';
const DNS_MANAGER_PATH = '/org/freedesktop/NetworkManager/DnsManager';
/** AddConnection2 (1.20) is the newest member used */
const NEEDS = 'NetworkManager 1.20 or later is needed';
/** NMActiveConnectionState */
const ACTIVATED = 2;
const DEACTIVATED = 4;
/** NMDeviceState */
export const DEVICE_ACTIVATED = 100;
/** NMActiveConnectionStateReason, by value */
const ACTIVE_REASONS = [
  'UNKNOWN',
  'NONE',
  'USER_DISCONNECTED',
  'DEVICE_DISCONNECTED',
  'SERVICE_STOPPED',
  'IP_CONFIG_INVALID',
  'CONNECT_TIMEOUT',
  'SERVICE_START_TIMEOUT',
  'SERVICE_START_FAILED',
  'NO_SECRETS',
  'LOGIN_FAILED',
  'CONNECTION_REMOVED',
  'DEPENDENCY_FAILED',
  'DEVICE_REALIZE_FAILED',
  'DEVICE_REMOVED',
];
/** NMRollbackResult, by value */
const ROLLBACK_RESULTS = ['OK', 'ERR_NO_DEVICE', 'ERR_DEVICE_UNMANAGED', 'ERR_FAILED'];

const reasonName = (names: readonly string[], code: number) => names[code] ?? `reason ${code}`;

export interface Device {
  path: string;
  /** the saved profile active on the device, if any */
  activeProfile?: string;
  data: DeviceData;
}

export interface SavedProfile {
  path: string;
  settings: Settings;
}

/** A connection to NetworkManager on the system bus, made on first use. */
export class NetworkManagerBus {
  private connection: Promise<SystemBus> | undefined;
  // NetworkManager never reuses an object path, so each object is introspected once; a show reads
  // dozens of objects, and on a slow node each introspection costs a round trip
  private readonly objects = new Map<string, Promise<dbus.ProxyObject>>();

  constructor(
    private readonly log: Logger,
    /** bound on waiting for each profile to be activated */
    private readonly activationTimeoutMs: number,
  ) {}

  private bus(): Promise<SystemBus> {
    return (this.connection ??= connectSystemBus(this.log, 'NetworkManager'));
  }

  private async object(path: string): Promise<dbus.ProxyObject> {
    const b = await this.bus();
    let proxy = this.objects.get(path);
    if (!proxy) {
      proxy = b.call(`introspecting ${NM} ${path}`, () => b.bus.getProxyObject(NM, path));
      this.objects.set(path, proxy);
      proxy.catch(() => this.objects.delete(path));
    }
    return proxy;
  }

  private async iface(path: string, name: string): Promise<dbus.ClientInterface> {
    const proxy = await this.object(path);
    const found = proxy.interfaces[name];
    if (!found) throw new Error(`${path} has no interface ${name}: the object is gone, or ${NEEDS}`);
    return found;
  }

  async props(path: string, name: string): Promise<Record<string, unknown>> {
    const b = await this.bus();
    const p = await this.iface(path, PROPERTIES);
    return plain(await b.call(`reading ${name} of ${path}`, () => p.GetAll!(name) as Promise<unknown>)) as Record<
      string,
      unknown
    >;
  }

  async method<T>(path: string, name: string, member: string, ...args: unknown[]): Promise<T> {
    const b = await this.bus();
    const i = await this.iface(path, name);
    if (typeof i[member] !== 'function') throw new Error(`${name} on ${path} has no method ${member}: ${NEEDS}`);
    return (await b.call(`${member} on ${path}`, () => i[member]!(...args) as Promise<T>)) as T;
  }

  private async ipConfig(path: unknown, family: 4 | 6): Promise<IpConfigData | undefined> {
    if (typeof path !== 'string' || path === '/') return undefined;
    const p = await this.props(path, `org.freedesktop.NetworkManager.IP${family}Config`);
    return {
      addresses: (p.AddressData as { address: string; prefix: number }[] | undefined) ?? [],
      routes: (
        (p.RouteData as { dest: string; prefix: number; 'next-hop'?: string; metric?: number }[] | undefined) ?? []
      ).map((r) => ({
        dest: r.dest,
        prefix: r.prefix,
        ...(r['next-hop'] !== undefined ? { nextHop: r['next-hop'] } : {}),
        ...(r.metric !== undefined ? { metric: r.metric } : {}),
      })),
      ...(p.Gateway ? { gateway: p.Gateway as string } : {}),
    };
  }

  private async activeProfile(active: unknown): Promise<string | undefined> {
    if (typeof active !== 'string' || active === '/') return undefined;
    // the activation may end between the two reads; then no profile is active
    const p = await this.props(active, ACTIVE).catch(() => undefined);
    return typeof p?.Connection === 'string' && p.Connection !== '/' ? p.Connection : undefined;
  }

  /** every device with its state, IP configuration and the profile applied to it */
  async devices(): Promise<Device[]> {
    const paths = await this.method<string[]>(NM_PATH, NM, 'GetDevices');
    return Promise.all(
      paths.map(async (path): Promise<Device> => {
        const p = await this.props(path, DEVICE);
        let applied: PlainSettings | undefined;
        if (p.State === DEVICE_ACTIVATED) {
          // the profile as it runs on the device, which may differ from the saved one
          const [settings] = await this.method<[Settings, bigint]>(path, DEVICE, 'GetAppliedConnection', 0);
          applied = plain(settings) as PlainSettings;
        }
        const profile = await this.activeProfile(p.ActiveConnection);
        return {
          path,
          ...(profile ? { activeProfile: profile } : {}),
          data: {
            name: p.Interface as string,
            deviceType: p.DeviceType as number,
            state: p.State as number,
            hwAddress: p.HwAddress as string | undefined,
            mtu: p.Mtu as number | undefined,
            ip4: await this.ipConfig(p.Ip4Config, 4),
            ip6: await this.ipConfig(p.Ip6Config, 6),
            ...(applied ? { applied } : {}),
          },
        };
      }),
    );
  }

  /** every saved profile with its settings */
  async profiles(): Promise<SavedProfile[]> {
    const paths = await this.method<string[]>(SETTINGS_PATH, SETTINGS, 'ListConnections');
    return Promise.all(
      paths.map(async (path) => ({ path, settings: await this.method<Settings>(path, CONNECTION, 'GetSettings') })),
    );
  }

  /** the DNS servers and search domains NetworkManager has put in place */
  async runningDns(): Promise<{ server: string[]; search: string[] }> {
    const dns = await this.props(DNS_MANAGER_PATH, 'org.freedesktop.NetworkManager.DnsManager').catch(
      () => ({}) as Record<string, unknown>,
    );
    const entries = (dns.Configuration as { nameservers?: string[]; domains?: string[] }[] | undefined) ?? [];
    return {
      server: [...new Set(entries.flatMap((e) => e.nameservers ?? []))],
      search: [...new Set(entries.flatMap((e) => e.domains ?? []))],
    };
  }

  /** why a device last changed state, for an activation that ended before its own reason could be read */
  private async deviceReason(name: string): Promise<string> {
    const device = (await this.devices().catch(() => [])).find((d) => d.data.name === name);
    const stateReason = device
      ? ((await this.props(device.path, DEVICE).catch(() => ({}) as Record<string, unknown>)).StateReason as
          [number, number] | undefined)
      : undefined;
    return stateReason ? ` (device state ${stateReason[0]}, NMDeviceStateReason ${stateReason[1]})` : '';
  }

  /**
   * Resolves when the activation reaches ACTIVATED, rejects with NetworkManager's reason when it
   * is deactivated instead or does not finish in time.
   */
  async waitActivated(active: string, name: string): Promise<void> {
    let settle: (outcome: { state: number; reason?: number }) => void = () => undefined;
    const outcome = new Promise<{ state: number; reason?: number }>((resolve) => (settle = resolve));
    let proxy: dbus.ClientInterface | undefined;
    const onStateChanged = (state: number, reason: number) => {
      if (state === ACTIVATED || state === DEACTIVATED) settle({ state, reason });
    };
    try {
      proxy = await this.iface(active, ACTIVE);
      // subscribed before the state is read, so a change in between is not missed
      proxy.on('StateChanged', onStateChanged);
      const state = (await this.props(active, ACTIVE)).State as number;
      if (state === ACTIVATED || state === DEACTIVATED) settle({ state });
    } catch {
      // the object is gone: NetworkManager has already given up on this activation
      settle({ state: DEACTIVATED });
    }
    try {
      const result = await bounded(outcome, this.activationTimeoutMs, `activating ${name}`);
      if (result.state === ACTIVATED) return;
      const why =
        result.reason !== undefined ? `: ${reasonName(ACTIVE_REASONS, result.reason)}` : await this.deviceReason(name);
      throw new Error(`NetworkManager could not activate ${name}${why}`);
    } finally {
      proxy?.off('StateChanged', onStateChanged);
    }
  }

  /** rolls a checkpoint back, and says which devices could not be */
  async rollback(checkpoint: string): Promise<void> {
    const names = new Map((await this.devices()).map((d) => [d.path, d.data.name]));
    const results = await this.method<Record<string, number>>(NM_PATH, NM, 'CheckpointRollback', checkpoint);
    const described = Object.entries(results).map(([path, code]) => ({
      device: names.get(path) ?? path,
      result: reasonName(ROLLBACK_RESULTS, code),
      ok: code === 0,
    }));
    this.log.info(
      { checkpoint, devices: Object.fromEntries(described.map((d) => [d.device, d.result])) },
      `NetworkManager rolled back checkpoint ${checkpoint}`,
    );
    const failed = described.filter((d) => !d.ok);
    if (failed.length)
      throw new Error(
        `NetworkManager could not roll back ${failed.map((d) => `${d.device} (${d.result})`).join(', ')}`,
      );
  }

  /** drops the bus connection, if one was made */
  close(): void {
    void this.connection?.then(
      (b) => b.bus.disconnect(),
      () => undefined,
    );
  }
}
