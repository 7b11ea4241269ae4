/**
 * The Systemd port over D-Bus with dbus-next, on the system bus (DBUS_SYSTEM_BUS_ADDRESS when set,
 * else /var/run/dbus/system_bus_socket): org.freedesktop.systemd1 for units and jobs,
 * org.freedesktop.hostname1 for the static hostname. Nothing here shells out to systemctl or
 * hostnamectl.
 */
import type dbus from 'dbus-next';
import type { Logger } from '../log/logger.js';
import { bounded, connectSystemBus, PROPERTIES } from './system-bus.js';
import type { Systemd, UnitStatus } from './systemd.js';

const SYSTEMD = 'org.freedesktop.systemd1';
const SYSTEMD_PATH = '/org/freedesktop/systemd1';
const MANAGER = 'org.freedesktop.systemd1.Manager';
const HOSTNAMED = 'org.freedesktop.hostname1';
const HOSTNAMED_PATH = '/org/freedesktop/hostname1';

/** the systemd interface that carries a unit's Result property, from its suffix */
function typeInterface(unit: string): string {
  const suffix = unit.slice(unit.lastIndexOf('.') + 1);
  return `org.freedesktop.systemd1.${suffix.charAt(0).toUpperCase()}${suffix.slice(1)}`;
}

/** one job of systemd's ListJobs(): id, unit, job type, job state, job path, unit path */
type ListedJob = [number, string, string, string, string, string];

export interface SystemdBusOptions {
  /**
   * how long a job is waited for before the wait is logged with the jobs systemd is running (a
   * start job of kubelet waits for kubelet-dependencies.target, which can wait minutes for
   * chrony-wait.service); then again at three times that, and so on
   */
  reportWaitAfterMs?: number;
}

/** Connects to the system bus; rejects with the bus address when it cannot be reached. */
export async function connectSystemdBus(log: Logger, options: SystemdBusOptions = {}): Promise<Systemd> {
  const reportWaitAfterMs = options.reportWaitAfterMs ?? 10_000;
  const { bus, call } = await connectSystemBus(log, 'systemd');
  const proxy = (name: string, path: string) =>
    call(`introspecting ${name} ${path}`, () => bus.getProxyObject(name, path));
  const manager = (await proxy(SYSTEMD, SYSTEMD_PATH)).getInterface(MANAGER);
  let hostnamed: dbus.ClientInterface | undefined;
  const hostnameProperties = async () =>
    (hostnamed ??= (await proxy(HOSTNAMED, HOSTNAMED_PATH)).getInterface(PROPERTIES));

  const property = async (props: dbus.ClientInterface, iface: string, name: string): Promise<string> => {
    const variant = (await call(
      `reading ${iface}.${name}`,
      () => props.Get!(iface, name) as Promise<dbus.Variant<string>>,
    )) as dbus.Variant<string>;
    return variant.value;
  };

  // systemd sends job signals to subscribed clients; a second Subscribe on this connection is refused
  let subscribed = false;
  const subscribe = async () => {
    if (subscribed) return;
    await call('Subscribe()', () => manager.Subscribe!() as Promise<unknown>);
    subscribed = true;
  };

  /** logs a job still waiting, naming the jobs systemd runs meanwhile: what it waits for */
  const reportWait = async (verb: string, unit: string, job: string, queuedAt: number) => {
    const jobs = (await call('ListJobs()', () => manager.ListJobs!() as Promise<ListedJob[]>)) as ListedJob[];
    const running = jobs.filter(([, , , state, path]) => state === 'running' && path !== job);
    const names = running.map(([, name, type]) => `${name} (${type})`);
    const waitedSeconds = Math.round((performance.now() - queuedAt) / 1000);
    log.info(
      { unit, job, waitedSeconds, running: names },
      `the ${verb} job of ${unit} is still waiting after ${waitedSeconds} s; ` +
        (names.length ? `systemd is running ${names.join(', ')}` : 'systemd is running no other job'),
    );
  };

  /** queues a start or restart job for the unit and waits for the job's result */
  const runJob = async (method: 'StartUnit' | 'RestartUnit' | 'StopUnit', unit: string, timeoutMs: number) => {
    const verb = { StartUnit: 'start', RestartUnit: 'restart', StopUnit: 'stop' }[method];
    await subscribe();
    // Subscribe to JobRemoved before the job is queued: the bus applies the match rule before it
    // routes the call, so the signal cannot be missed. It may still arrive before the call's
    // reply names the job, hence the results kept by job path.
    const finished = new Map<string, string>();
    let timer: NodeJS.Timeout | undefined;
    let waiting: { job: string; resolve: (result: string) => void } | undefined;
    const onJobRemoved = (_id: number, job: string, _unit: string, result: string) => {
      if (waiting?.job === job) waiting.resolve(result);
      else finished.set(job, result);
    };
    manager.on('JobRemoved', onJobRemoved);
    try {
      const job = (await call(
        `${method}(${unit}, replace)`,
        () => manager[method]!(unit, 'replace') as Promise<string>,
      )) as string;
      log.debug({ unit, job }, `${verb} job queued`);
      const early = finished.get(job);
      if (early !== undefined) return { jobResult: early };
      const queuedAt = performance.now();
      const schedule = (afterMs: number) =>
        (timer = setTimeout(() => {
          reportWait(verb, unit, job, queuedAt).catch((err: unknown) =>
            log.debug({ err }, `could not list systemd's jobs`),
          );
          schedule(afterMs * 3);
        }, afterMs));
      schedule(reportWaitAfterMs);
      const jobResult = await bounded(
        new Promise<string>((resolve) => (waiting = { job, resolve })),
        timeoutMs,
        `waiting for the ${verb} job of ${unit} (${job})`,
      );
      return { jobResult };
    } finally {
      clearTimeout(timer);
      manager.off('JobRemoved', onJobRemoved);
    }
  };

  return {
    async startAndWait(unit, timeoutMs) {
      // drop-ins written before (the node IP) take effect only after a daemon reload
      await call('Reload()', () => manager.Reload!() as Promise<unknown>);
      return runJob('StartUnit', unit, timeoutMs);
    },

    async restartAndWait(unit, timeoutMs, options) {
      if (options?.reload) await call('Reload()', () => manager.Reload!() as Promise<unknown>);
      return runJob('RestartUnit', unit, timeoutMs);
    },

    stopAndWait: (unit, timeoutMs) => runJob('StopUnit', unit, timeoutMs),

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

    async powerOff() {
      await call(
        'StartUnit(poweroff.target, replace-irreversibly)',
        () => manager.StartUnit!('poweroff.target', 'replace-irreversibly') as Promise<unknown>,
      );
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
