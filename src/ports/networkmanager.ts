/**
 * The Nmstate port through NetworkManager's own D-Bus API, for nodes without nmstatectl (it is not
 * packaged for Debian). The same contract as the nmstatectl adapter:
 *   apply  = CheckpointCreate (NetworkManager rolls back by itself when the timeout passes), then
 *            each profile added or updated (persistently, as keyfiles) and activated, waiting for
 *            all activations; a failure rolls the checkpoint back at once, as nmstatectl does;
 *   commit = CheckpointDestroy; rollback = CheckpointRollback;
 *   show   = devices, their IP configuration, their applied profiles and the DNS manager, as nmstate.
 * Only the interfaces the desired state names are touched. An interface's profile is the one active
 * on its device, else the one bound to its name; further profiles bound to its name are deleted so
 * that the next boot cannot pick a stale one.
 */
import type dbus from 'dbus-next';
import type { NmstateState } from '../config/v1/schema.js';
import type { Logger } from '../log/logger.js';
import {
  type DeviceData,
  type IpConfigData,
  mergeSettings,
  type PlainSettings,
  withoutAutoconnect,
  sameType,
  plain,
  profilesFor,
  type Settings,
  stateFromDevices,
  type TranslationOptions,
} from './nm-settings.js';
import type { Nmstate } from './nmstate.js';
import { bounded, connectSystemBus, PROPERTIES, type SystemBus } from './system-bus.js';

const NM = 'org.freedesktop.NetworkManager';
const NM_PATH = '/org/freedesktop/NetworkManager';
const SETTINGS_PATH = '/org/freedesktop/NetworkManager/Settings';
const SETTINGS = 'org.freedesktop.NetworkManager.Settings';
const CONNECTION = 'org.freedesktop.NetworkManager.Settings.Connection';
const DEVICE = 'org.freedesktop.NetworkManager.Device';
const ACTIVE = 'org.freedesktop.NetworkManager.Connection.Active';
const DNS_MANAGER_PATH = '/org/freedesktop/NetworkManager/DnsManager';
/** NM_CHECKPOINT_CREATE_FLAG_DESTROY_ALL | DELETE_NEW_CONNECTIONS | DISCONNECT_NEW_DEVICES */
export const CHECKPOINT_FLAGS = 0x01 | 0x02 | 0x04;
/** NM_SETTINGS_ADD_CONNECTION2_FLAG_TO_DISK | BLOCK_AUTOCONNECT, the same bits for Update2 */
export const SAVE_WITHOUT_AUTOCONNECT = 0x01 | 0x20;
/** AddConnection2 (1.20) is the newest member used */
const NEEDS = 'NetworkManager 1.20 or later is needed';
/** NMActiveConnectionState */
const ACTIVATED = 2;
const DEACTIVATED = 4;
/** NMDeviceState */
const DEVICE_ACTIVATED = 100;
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
/** bonds and DHCP can take a while; the checkpoint protects the node meanwhile */
const ACTIVATION_TIMEOUT_MS = 90_000;

const reasonName = (names: readonly string[], code: number) => names[code] ?? `reason ${code}`;

export interface NetworkManagerOptions extends TranslationOptions {
  /** bound on waiting for each profile to be activated */
  activationTimeoutMs?: number;
}

export interface NetworkManagerNmstate extends Nmstate {
  /** drops the bus connection, if one was made */
  close(): void;
}

interface Device {
  path: string;
  /** the saved profile active on the device, if any */
  activeProfile?: string;
  data: DeviceData;
}

/** The adapter; it connects to the system bus on first use. */
export function createNetworkManager(log: Logger, options: NetworkManagerOptions = {}): NetworkManagerNmstate {
  const activationTimeoutMs = options.activationTimeoutMs ?? ACTIVATION_TIMEOUT_MS;
  let connection: Promise<SystemBus> | undefined;
  const bus = () => (connection ??= connectSystemBus(log, 'NetworkManager'));

  // NetworkManager never reuses an object path, so each object is introspected once; a show reads
  // dozens of objects, and on a slow node each introspection costs a round trip
  const objects = new Map<string, Promise<dbus.ProxyObject>>();
  const object = async (path: string): Promise<dbus.ProxyObject> => {
    const b = await bus();
    let proxy = objects.get(path);
    if (!proxy) {
      proxy = b.call(`introspecting ${NM} ${path}`, () => b.bus.getProxyObject(NM, path));
      objects.set(path, proxy);
      proxy.catch(() => objects.delete(path));
    }
    return proxy;
  };
  const iface = async (path: string, name: string): Promise<dbus.ClientInterface> => {
    const proxy = await object(path);
    const found = proxy.interfaces[name];
    if (!found) throw new Error(`${path} has no interface ${name}: the object is gone, or ${NEEDS}`);
    return found;
  };

  const props = async (path: string, name: string): Promise<Record<string, unknown>> => {
    const b = await bus();
    const p = await iface(path, PROPERTIES);
    return plain(await b.call(`reading ${name} of ${path}`, () => p.GetAll!(name) as Promise<unknown>)) as Record<
      string,
      unknown
    >;
  };
  const method = async <T>(path: string, name: string, member: string, ...args: unknown[]): Promise<T> => {
    const b = await bus();
    const i = await iface(path, name);
    if (typeof i[member] !== 'function') throw new Error(`${name} on ${path} has no method ${member}: ${NEEDS}`);
    return (await b.call(`${member} on ${path}`, () => i[member]!(...args) as Promise<T>)) as T;
  };

  const ipConfig = async (path: unknown, family: 4 | 6): Promise<IpConfigData | undefined> => {
    if (typeof path !== 'string' || path === '/') return undefined;
    const p = await props(path, `org.freedesktop.NetworkManager.IP${family}Config`);
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
  };

  const activeProfile = async (active: unknown): Promise<string | undefined> => {
    if (typeof active !== 'string' || active === '/') return undefined;
    // the activation may end between the two reads; then no profile is active
    const p = await props(active, ACTIVE).catch(() => undefined);
    return typeof p?.Connection === 'string' && p.Connection !== '/' ? p.Connection : undefined;
  };

  const devices = async (): Promise<Device[]> => {
    const paths = await method<string[]>(NM_PATH, NM, 'GetDevices');
    return Promise.all(
      paths.map(async (path): Promise<Device> => {
        const p = await props(path, DEVICE);
        let applied: PlainSettings | undefined;
        if (p.State === DEVICE_ACTIVATED) {
          // the profile as it runs on the device, which may differ from the saved one
          const [settings] = await method<[Settings, bigint]>(path, DEVICE, 'GetAppliedConnection', 0);
          applied = plain(settings) as PlainSettings;
        }
        const profile = await activeProfile(p.ActiveConnection);
        return {
          path,
          ...(profile ? { activeProfile: profile } : {}),
          data: {
            name: p.Interface as string,
            deviceType: p.DeviceType as number,
            state: p.State as number,
            hwAddress: p.HwAddress as string | undefined,
            mtu: p.Mtu as number | undefined,
            ip4: await ipConfig(p.Ip4Config, 4),
            ip6: await ipConfig(p.Ip6Config, 6),
            ...(applied ? { applied } : {}),
          },
        };
      }),
    );
  };

  /** every saved profile with its settings */
  const profiles = async (): Promise<{ path: string; settings: Settings }[]> => {
    const paths = await method<string[]>(SETTINGS_PATH, SETTINGS, 'ListConnections');
    return Promise.all(
      paths.map(async (path) => ({ path, settings: await method<Settings>(path, CONNECTION, 'GetSettings') })),
    );
  };

  /** the profiles that belong to an interface: the one active on its device first, then those bound to its name */
  const profilesOf = (name: string, all: { path: string; settings: Settings }[], device: Device | undefined) => {
    const bound = all.filter((p) => p.settings.connection?.['interface-name']?.value === name);
    const active = all.find((p) => p.path === device?.activeProfile);
    return active ? [active, ...bound.filter((p) => p !== active)] : bound;
  };

  /** why a device last changed state, for an activation that ended before its own reason could be read */
  const deviceReason = async (name: string): Promise<string> => {
    const device = (await devices().catch(() => [])).find((d) => d.data.name === name);
    const stateReason = device
      ? ((await props(device.path, DEVICE).catch(() => ({}) as Record<string, unknown>)).StateReason as
          [number, number] | undefined)
      : undefined;
    return stateReason ? ` (device state ${stateReason[0]}, NMDeviceStateReason ${stateReason[1]})` : '';
  };

  /**
   * Resolves when the activation reaches ACTIVATED, rejects with NetworkManager's reason when it
   * is deactivated instead or does not finish in time.
   */
  const waitActivated = async (active: string, name: string): Promise<void> => {
    let settle: (outcome: { state: number; reason?: number }) => void = () => undefined;
    const outcome = new Promise<{ state: number; reason?: number }>((resolve) => (settle = resolve));
    let proxy: dbus.ClientInterface | undefined;
    const onStateChanged = (state: number, reason: number) => {
      if (state === ACTIVATED || state === DEACTIVATED) settle({ state, reason });
    };
    try {
      proxy = await iface(active, ACTIVE);
      // subscribed before the state is read, so a change in between is not missed
      proxy.on('StateChanged', onStateChanged);
      const state = (await props(active, ACTIVE)).State as number;
      if (state === ACTIVATED || state === DEACTIVATED) settle({ state });
    } catch {
      // the object is gone: NetworkManager has already given up on this activation
      settle({ state: DEACTIVATED });
    }
    try {
      const result = await bounded(outcome, activationTimeoutMs, `activating ${name}`);
      if (result.state === ACTIVATED) return;
      const why =
        result.reason !== undefined ? `: ${reasonName(ACTIVE_REASONS, result.reason)}` : await deviceReason(name);
      throw new Error(`NetworkManager could not activate ${name}${why}`);
    } finally {
      proxy?.off('StateChanged', onStateChanged);
    }
  };

  const rollback = async (checkpoint: string, names: Map<string, string>): Promise<void> => {
    const results = await method<Record<string, number>>(NM_PATH, NM, 'CheckpointRollback', checkpoint);
    const described = Object.entries(results).map(([path, code]) => ({
      device: names.get(path) ?? path,
      result: reasonName(ROLLBACK_RESULTS, code),
      ok: code === 0,
    }));
    log.info(
      { checkpoint, devices: Object.fromEntries(described.map((d) => [d.device, d.result])) },
      `NetworkManager rolled back checkpoint ${checkpoint}`,
    );
    const failed = described.filter((d) => !d.ok);
    if (failed.length)
      throw new Error(
        `NetworkManager could not roll back ${failed.map((d) => `${d.device} (${d.result})`).join(', ')}`,
      );
  };

  const deviceNames = async (): Promise<Map<string, string>> =>
    new Map((await devices()).map((d) => [d.path, d.data.name]));

  const applyProfiles = async (plan: ReturnType<typeof profilesFor>, checkpoint: string): Promise<void> => {
    const existing = await profiles();
    const byName = new Map((await devices()).map((d) => [d.data.name, d]));

    for (const name of [...plan.absent, ...plan.down]) {
      const device = byName.get(name);
      const own = profilesOf(name, existing, device);
      if (device && device.data.state === DEVICE_ACTIVATED) await method(device.path, DEVICE, 'Disconnect');
      if (plan.absent.includes(name)) {
        for (const p of own) await method(p.path, CONNECTION, 'Delete');
        log.info({ iface: name, checkpoint, removed: own.length }, `deleted the NetworkManager profiles of ${name}`);
      } else {
        // kept, but no longer brought up at boot: down is to stay down
        for (const p of own)
          await method(p.path, CONNECTION, 'Update2', withoutAutoconnect(p.settings), SAVE_WITHOUT_AUTOCONNECT, {});
        log.info(
          { iface: name, checkpoint, profiles: own.length },
          `took ${name} down; its profiles no longer autoconnect`,
        );
      }
    }

    const activations: { name: string; active: string }[] = [];
    for (const profile of plan.profiles) {
      const candidates = profilesOf(profile.name, existing, byName.get(profile.name));
      // one of another type (br-ex an OVS interface before, a Linux bridge now) is replaced, not updated
      const first = candidates.find((p) => sameType(p.settings, profile.settings));
      const others = candidates.filter((p) => p !== first);
      for (const other of others) await method(other.path, CONNECTION, 'Delete');
      // saved to disk, and not auto-activated in between: the activation below would cut that one short
      let path: string;
      if (first) {
        await method(
          first.path,
          CONNECTION,
          'Update2',
          mergeSettings(first.settings, profile.settings),
          SAVE_WITHOUT_AUTOCONNECT,
          {},
        );
        path = first.path;
      } else {
        [path] = await method<[string, unknown]>(
          SETTINGS_PATH,
          SETTINGS,
          'AddConnection2',
          profile.settings,
          SAVE_WITHOUT_AUTOCONNECT,
          {},
        );
      }
      log.info(
        { iface: profile.name, profile: path, updated: Boolean(first), removed: others.length },
        `${first ? 'updated' : 'added'} the NetworkManager profile for ${profile.name}`,
      );
      // controllers first, then their ports, then the rest; NetworkManager holds each until what it depends on is up
      activations.push({
        name: profile.name,
        active: await method<string>(NM_PATH, NM, 'ActivateConnection', path, '/', '/'),
      });
    }
    // every outcome, in activation order: a failed controller fails its ports too, and the cause comes first
    const outcomes = await Promise.allSettled(activations.map((a) => waitActivated(a.active, a.name)));
    const failed = outcomes.flatMap((o) =>
      o.status === 'rejected' ? [o.reason instanceof Error ? o.reason.message : String(o.reason)] : [],
    );
    if (failed.length) throw new Error(failed.join('; '));
  };

  return {
    async show() {
      const dns = await props(DNS_MANAGER_PATH, 'org.freedesktop.NetworkManager.DnsManager').catch(
        () => ({}) as Record<string, unknown>,
      );
      const entries = (dns.Configuration as { nameservers?: string[]; domains?: string[] }[] | undefined) ?? [];
      const running = {
        server: [...new Set(entries.flatMap((e) => e.nameservers ?? []))],
        search: [...new Set(entries.flatMap((e) => e.domains ?? []))],
      };
      return stateFromDevices(
        (await devices()).map((d) => d.data),
        running,
        options,
      );
    },

    async apply(state: NmstateState, { timeoutSeconds }) {
      // before anything changes: an unsupported state is refused, not half applied
      const plan = profilesFor(state, options);
      const checkpoint = await method<string>(NM_PATH, NM, 'CheckpointCreate', [], timeoutSeconds, CHECKPOINT_FLAGS);
      log.info(
        { checkpoint, timeoutSeconds },
        `NetworkManager checkpoint ${checkpoint} created; it rolls back by itself after ${timeoutSeconds} s`,
      );
      try {
        await applyProfiles(plan, checkpoint);
      } catch (err) {
        // undone now rather than at the timeout, so that the node is back on its network at once
        const reason = err instanceof Error ? err.message : String(err);
        let undone = 'the change was rolled back';
        try {
          await rollback(checkpoint, await deviceNames());
        } catch (rollbackErr) {
          undone = `the rollback failed too (${rollbackErr instanceof Error ? rollbackErr.message : String(rollbackErr)}); NetworkManager rolls back by itself after ${timeoutSeconds} s`;
        }
        throw new Error(`${reason}; ${undone}`, { cause: err });
      }
      return { checkpoint };
    },

    async commit(checkpoint) {
      await method(NM_PATH, NM, 'CheckpointDestroy', checkpoint);
    },

    async rollback(checkpoint) {
      await rollback(checkpoint, await deviceNames());
    },

    close() {
      void connection?.then(
        (b) => b.bus.disconnect(),
        () => undefined,
      );
    },
  };
}
