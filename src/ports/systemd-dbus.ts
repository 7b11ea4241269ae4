/**
 * The Systemd port over D-Bus with dbus-next, on the system bus (DBUS_SYSTEM_BUS_ADDRESS when set,
 * else /var/run/dbus/system_bus_socket): org.freedesktop.systemd1 for units and jobs,
 * org.freedesktop.hostname1 for the static hostname. Nothing here shells out to systemctl or
 * hostnamectl.
 */
import dbus from 'dbus-next';
import type { Logger } from '../log/logger.js';
import type { Systemd, UnitStatus } from './systemd.js';

const SYSTEMD = 'org.freedesktop.systemd1';
const SYSTEMD_PATH = '/org/freedesktop/systemd1';
const MANAGER = 'org.freedesktop.systemd1.Manager';
const HOSTNAMED = 'org.freedesktop.hostname1';
const HOSTNAMED_PATH = '/org/freedesktop/hostname1';
const PROPERTIES = 'org.freedesktop.DBus.Properties';

const DEFAULT_SYSTEM_BUS = 'unix:path=/var/run/dbus/system_bus_socket';
/** bound for one method call: a bus that stops answering must not hang the run */
const CALL_TIMEOUT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;

/** the D-Bus error name and text, or the message: what a support engineer can search for */
function describe(err: unknown): string {
  if (err instanceof dbus.DBusError) return `${err.type}: ${err.text}`;
  return err instanceof Error ? err.message : String(err);
}

function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${Math.round(ms / 1000)} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** the systemd interface that carries a unit's Result property, from its suffix */
function typeInterface(unit: string): string {
  const suffix = unit.slice(unit.lastIndexOf('.') + 1);
  return `org.freedesktop.systemd1.${suffix.charAt(0).toUpperCase()}${suffix.slice(1)}`;
}

/** Connects to the system bus; rejects with the bus address when it cannot be reached. */
export async function connectSystemdBus(log: Logger): Promise<Systemd> {
  const address = process.env.DBUS_SYSTEM_BUS_ADDRESS || DEFAULT_SYSTEM_BUS;
  const bus = dbus.systemBus();
  let lastError: Error | undefined;
  // dbus-next reports a failed connection only as an 'error' event, and its calls would wait forever
  const connected = new Promise<void>((resolve, reject) => {
    bus.once('connect', resolve);
    bus.once('error', reject);
  });
  bus.on('error', (err: Error) => {
    lastError = err;
    log.debug({ err: err.message }, 'system bus error');
  });
  try {
    await bounded(connected, CONNECT_TIMEOUT_MS, `connecting to the system bus at ${address}`);
  } catch (err) {
    bus.disconnect();
    throw new Error(`cannot reach systemd over D-Bus at ${address}: ${describe(err)}`, { cause: err });
  }
  log.debug({ address }, 'connected to the system bus');

  const call = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await bounded(fn(), CALL_TIMEOUT_MS, what);
    } catch (err) {
      const detail = lastError && !(err instanceof dbus.DBusError) ? ` (bus: ${lastError.message})` : '';
      throw new Error(`${what} failed: ${describe(err)}${detail}`, { cause: err });
    }
  };
  const proxy = (name: string, path: string) => call(`introspecting ${name} ${path}`, () => bus.getProxyObject(name, path));
  const manager = (await proxy(SYSTEMD, SYSTEMD_PATH)).getInterface(MANAGER);
  let hostnamed: dbus.ClientInterface | undefined;
  const hostnameProperties = async () => (hostnamed ??= (await proxy(HOSTNAMED, HOSTNAMED_PATH)).getInterface(PROPERTIES));

  const property = async (props: dbus.ClientInterface, iface: string, name: string): Promise<string> => {
    const variant = (await call(`reading ${iface}.${name}`, () => props.Get!(iface, name) as Promise<dbus.Variant<string>>)) as dbus.Variant<string>;
    return variant.value;
  };

  // systemd sends job signals to subscribed clients; a second Subscribe on this connection is refused
  let subscribed = false;
  const subscribe = async () => {
    if (subscribed) return;
    await call('Subscribe()', () => manager.Subscribe!() as Promise<unknown>);
    subscribed = true;
  };

  return {
    async enableAndStart(unit, timeoutMs) {
      await call(`EnableUnitFiles(${unit})`, () => manager.EnableUnitFiles!([unit], false, false) as Promise<unknown>);
      // the enablement and any drop-ins written before take effect only after a daemon reload
      await call('Reload()', () => manager.Reload!() as Promise<unknown>);
      await subscribe();

      // Subscribe to JobRemoved before StartUnit is sent: the bus applies the match rule before it
      // routes the call, so the signal cannot be missed. It may still arrive before StartUnit's
      // reply names the job, hence the results kept by job path.
      const finished = new Map<string, string>();
      let waiting: { job: string; resolve: (result: string) => void } | undefined;
      const onJobRemoved = (_id: number, job: string, _unit: string, result: string) => {
        if (waiting?.job === job) waiting.resolve(result);
        else finished.set(job, result);
      };
      manager.on('JobRemoved', onJobRemoved);
      try {
        const job = (await call(`StartUnit(${unit}, replace)`, () => manager.StartUnit!(unit, 'replace') as Promise<string>)) as string;
        log.debug({ unit, job }, 'start job queued');
        const early = finished.get(job);
        const jobResult =
          early ??
          (await bounded(
            new Promise<string>((resolve) => (waiting = { job, resolve })),
            timeoutMs,
            `waiting for the start job of ${unit} (${job})`,
          ));
        return { jobResult };
      } finally {
        manager.off('JobRemoved', onJobRemoved);
      }
    },

    async unitStatus(unit) {
      const path = (await call(`LoadUnit(${unit})`, () => manager.LoadUnit!(unit) as Promise<string>)) as string;
      const props = (await proxy(SYSTEMD, path)).getInterface(PROPERTIES);
      const unitProperty = (name: string) => property(props, 'org.freedesktop.systemd1.Unit', name);
      const status: UnitStatus = {
        activeState: await unitProperty('ActiveState'),
        subState: await unitProperty('SubState'),
        result: await property(props, typeInterface(unit), 'Result'),
        unitFileState: await unitProperty('UnitFileState'),
      };
      return status;
    },

    async staticHostname() {
      return property(await hostnameProperties(), HOSTNAMED, 'StaticHostname');
    },

    async setStaticHostname(name) {
      const iface = (await proxy(HOSTNAMED, HOSTNAMED_PATH)).getInterface(HOSTNAMED);
      // interactive=false: a boot-time agent must never wait for a polkit prompt
      await call(`SetStaticHostname(${name})`, () => iface.SetStaticHostname!(name, false) as Promise<unknown>);
    },

    close() {
      bus.disconnect();
    },
  };
}
