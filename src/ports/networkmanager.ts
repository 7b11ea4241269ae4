/**
 * The Nmstate port through NetworkManager's own D-Bus API, for nodes without nmstatectl (it is not
 * packaged for Debian). The same contract as the nmstatectl adapter:
 *   apply  = CheckpointCreate (NetworkManager rolls back by itself when the timeout passes), then
 *            each profile added or updated (persistently, as keyfiles) and activated, waiting for it;
 *   commit = CheckpointDestroy; rollback = CheckpointRollback;
 *   show   = devices, their IP configuration, their applied profiles and the DNS manager, as nmstate.
 * Only the interfaces the desired state names are touched.
 */
import type { NmstateState } from '../config/v1/schema.js';
import type { Logger } from '../log/logger.js';
import { type Clock, pollUntil, systemClock } from './clock.js';
import {
  type DeviceData,
  type IpConfigData,
  mergeSettings,
  type PlainSettings,
  plain,
  profilesFor,
  type Settings,
  stateFromDevices,
} from './nm-settings.js';
import type { Nmstate } from './nmstate.js';
import { connectSystemBus, PROPERTIES, type SystemBus } from './system-bus.js';

const NM = 'org.freedesktop.NetworkManager';
const NM_PATH = '/org/freedesktop/NetworkManager';
const SETTINGS_PATH = '/org/freedesktop/NetworkManager/Settings';
const SETTINGS = 'org.freedesktop.NetworkManager.Settings';
const CONNECTION = 'org.freedesktop.NetworkManager.Settings.Connection';
const DEVICE = 'org.freedesktop.NetworkManager.Device';
const ACTIVE = 'org.freedesktop.NetworkManager.Connection.Active';
const DNS_MANAGER_PATH = '/org/freedesktop/NetworkManager/DnsManager';
/** NM_CHECKPOINT_CREATE_FLAG_DESTROY_ALL | DELETE_NEW_CONNECTIONS | DISCONNECT_NEW_DEVICES */
const CHECKPOINT_FLAGS = 0x01 | 0x02 | 0x04;
/** NMActiveConnectionState */
const ACTIVATED = 2;
const DEACTIVATED = 4;
const ACTIVATION_TIMEOUT_MS = 90_000;

/** The adapter; it connects to the system bus on first use. */
export function createNetworkManager(log: Logger, clock: Clock = systemClock): Nmstate {
  let connection: SystemBus | undefined;
  const bus = async () => (connection ??= await connectSystemBus(log, 'NetworkManager'));

  const props = async (path: string, iface: string): Promise<Record<string, unknown>> => {
    const b = await bus();
    const p = await b.iface(NM, path, PROPERTIES);
    return plain(await b.call(`reading ${iface} of ${path}`, () => p.GetAll!(iface) as Promise<unknown>)) as Record<string, unknown>;
  };
  const method = async <T>(path: string, iface: string, name: string, ...args: unknown[]): Promise<T> => {
    const b = await bus();
    const i = await b.iface(NM, path, iface);
    return (await b.call(`${name} on ${path}`, () => i[name]!(...args) as Promise<T>)) as T;
  };

  const ipConfig = async (path: unknown, family: 4 | 6): Promise<IpConfigData | undefined> => {
    if (typeof path !== 'string' || path === '/') return undefined;
    const p = await props(path, `org.freedesktop.NetworkManager.IP${family}Config`);
    return {
      addresses: (p.AddressData as { address: string; prefix: number }[] | undefined) ?? [],
      routes: ((p.RouteData as { dest: string; prefix: number; 'next-hop'?: string; metric?: number }[] | undefined) ?? []).map((r) => ({
        dest: r.dest,
        prefix: r.prefix,
        ...(r['next-hop'] !== undefined ? { nextHop: r['next-hop'] } : {}),
        ...(r.metric !== undefined ? { metric: r.metric } : {}),
      })),
      ...(p.Gateway ? { gateway: p.Gateway as string } : {}),
    };
  };

  const devices = async (): Promise<{ path: string; data: DeviceData }[]> => {
    const paths = await method<string[]>(NM_PATH, NM, 'GetDevices');
    return Promise.all(
      paths.map(async (path) => {
        const p = await props(path, DEVICE);
        let applied: PlainSettings | undefined;
        if (p.State === 100) {
          // the profile as it runs on the device, which may differ from the saved one
          const [settings] = await method<[Settings, bigint]>(path, DEVICE, 'GetAppliedConnection', 0);
          applied = plain(settings) as PlainSettings;
        }
        return {
          path,
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

  /** saved profiles by the interface they are bound to */
  const profilesByInterface = async (): Promise<Map<string, { path: string; settings: Settings }[]>> => {
    const paths = await method<string[]>(SETTINGS_PATH, SETTINGS, 'ListConnections');
    const out = new Map<string, { path: string; settings: Settings }[]>();
    for (const path of paths) {
      const settings = await method<Settings>(path, CONNECTION, 'GetSettings');
      const name = settings.connection?.['interface-name']?.value as string | undefined;
      if (name) out.set(name, [...(out.get(name) ?? []), { path, settings }]);
    }
    return out;
  };

  const waitActivated = async (active: string, name: string): Promise<void> => {
    const state = await pollUntil(
      clock,
      async () => {
        const s = (await props(active, ACTIVE).catch(() => ({ State: DEACTIVATED }))).State as number;
        return s === ACTIVATED || s === DEACTIVATED ? s : undefined;
      },
      { timeoutMs: ACTIVATION_TIMEOUT_MS, intervalMs: 200, maxIntervalMs: 1000 },
    );
    if (state !== ACTIVATED) throw new Error(`NetworkManager could not activate ${name}${state === DEACTIVATED ? ' (it was deactivated)' : ` within ${ACTIVATION_TIMEOUT_MS / 1000} s`}`);
  };

  return {
    async show() {
      const dns = await props(DNS_MANAGER_PATH, 'org.freedesktop.NetworkManager.DnsManager').catch(() => ({}) as Record<string, unknown>);
      const entries = (dns.Configuration as { nameservers?: string[]; domains?: string[] }[] | undefined) ?? [];
      const running = { server: entries.flatMap((e) => e.nameservers ?? []), search: entries.flatMap((e) => e.domains ?? []) };
      return stateFromDevices(
        (await devices()).map((d) => d.data),
        running,
      );
    },

    async apply(state: NmstateState, { timeoutSeconds }) {
      // before anything changes: an unsupported state is refused, not half applied
      const plan = profilesFor(state);
      const checkpoint = await method<string>(NM_PATH, NM, 'CheckpointCreate', [], timeoutSeconds, CHECKPOINT_FLAGS);
      log.info({ checkpoint, timeoutSeconds }, `NetworkManager checkpoint ${checkpoint} created; it rolls back by itself after ${timeoutSeconds} s`);
      const existing = await profilesByInterface();
      const byName = new Map((await devices()).map((d) => [d.data.name, d]));

      for (const name of [...plan.absent, ...plan.down]) {
        const device = byName.get(name);
        if (device) await method(device.path, DEVICE, 'Disconnect');
        if (plan.absent.includes(name)) for (const p of existing.get(name) ?? []) await method(p.path, CONNECTION, 'Delete');
      }

      for (const profile of plan.profiles) {
        const [first, ...others] = existing.get(profile.name) ?? [];
        let path: string;
        if (first) {
          await method(first.path, CONNECTION, 'Update', mergeSettings(first.settings, profile.settings));
          path = first.path;
          // one profile per interface, so the next boot cannot pick an old one
          for (const other of others) await method(other.path, CONNECTION, 'Delete');
        } else {
          path = await method<string>(SETTINGS_PATH, SETTINGS, 'AddConnection', profile.settings);
        }
        log.info({ iface: profile.name, profile: path, updated: Boolean(first) }, `${first ? 'updated' : 'added'} the NetworkManager profile for ${profile.name}`);
        const active = await method<string>(NM_PATH, NM, 'ActivateConnection', path, '/', '/');
        await waitActivated(active, profile.name);
      }
      return { checkpoint };
    },

    async commit(checkpoint) {
      await method(NM_PATH, NM, 'CheckpointDestroy', checkpoint);
    },

    async rollback(checkpoint) {
      const results = await method<Record<string, number>>(NM_PATH, NM, 'CheckpointRollback', checkpoint);
      const failed = Object.entries(results).filter(([, code]) => code !== 0);
      if (failed.length) throw new Error(`NetworkManager could not roll back ${failed.map(([device, code]) => `${device} (result ${code})`).join(', ')}`);
    },
  };
}
