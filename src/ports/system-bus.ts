/**
 * One connection to the D-Bus system bus (DBUS_SYSTEM_BUS_ADDRESS when set, else
 * /var/run/dbus/system_bus_socket) with bounded calls, shared by the adapters that speak to
 * systemd, hostnamed and NetworkManager.
 */
import dbus from 'dbus-next';
import type { Logger } from '../log/logger.js';

export const DEFAULT_SYSTEM_BUS = 'unix:path=/var/run/dbus/system_bus_socket';
export const PROPERTIES = 'org.freedesktop.DBus.Properties';
/** bound for one method call: a bus that stops answering must not hang the run */
const CALL_TIMEOUT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;

/** the D-Bus error name and text, or the message: what a support engineer can search for */
export function describe(err: unknown): string {
  if (err instanceof dbus.DBusError) return `${err.type}: ${err.text}`;
  return err instanceof Error ? err.message : String(err);
}

export function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${Math.round(ms / 1000)} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface SystemBus {
  bus: dbus.MessageBus;
  /** runs one bus call, bounded, with a message that names it */
  call<T>(what: string, fn: () => Promise<T>): Promise<T>;
  /** an interface of an object, introspected once per call */
  iface(name: string, path: string, iface: string): Promise<dbus.ClientInterface>;
}

/** Connects to the system bus; rejects naming `service` and the bus address when it cannot. */
export async function connectSystemBus(log: Logger, service: string): Promise<SystemBus> {
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
    throw new Error(`cannot reach ${service} over D-Bus at ${address}: ${describe(err)}`, { cause: err });
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
  const iface = async (name: string, path: string, which: string) =>
    (await call(`introspecting ${name} ${path}`, () => bus.getProxyObject(name, path))).getInterface(which);
  return { bus, call, iface };
}
