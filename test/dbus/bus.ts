/**
 * A real D-Bus for tests: a private `dbus-daemon` (Debian package `dbus`) listening on a socket in
 * a temporary folder, and the test services (test/dbus/service.ts) that own the systemd and
 * hostnamed names on it. Point DBUS_SYSTEM_BUS_ADDRESS at `bus.address` and the agent's real D-Bus
 * adapter talks to them exactly as it talks to systemd on a node.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import dbus from 'dbus-next';
import { CONTROL_INTERFACE, CONTROL_NAME, CONTROL_PATH, type Recorded, type Scenario } from './protocol.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SERVICE = path.join(REPO, 'test/dbus/service.ts');
const DBUS_DAEMON = ['/usr/bin/dbus-daemon', '/bin/dbus-daemon'].find((p) => existsSync(p));

// the session bus's permissive default policy: any local client may own any name and call anything
const config = (socket: string) => `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`;

/** Resolves with the first line the child prints on stdout; rejects if it exits first. */
function firstLine(child: ChildProcess, what: string, stderr: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const onExit = (code: number | null) =>
      reject(new Error(`${what} exited (${code}) before it was ready: ${stderr()}`));
    child.once('exit', onExit);
    lines.once('line', (line) => {
      child.off('exit', onExit);
      lines.close();
      resolve(line.trim());
    });
  });
}

function collectStderr(child: ChildProcess): () => string {
  let text = '';
  child.stderr!.on('data', (d: Buffer) => (text += d.toString('utf8')));
  return () => text;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exited;
}

export interface PrivateBus {
  /** the D-Bus address, for DBUS_SYSTEM_BUS_ADDRESS */
  address: string;
  stop(): Promise<void>;
}

export function missingDbusDaemon(): string | undefined {
  return DBUS_DAEMON ? undefined : 'dbus-daemon not found: apt-get install -y --no-install-recommends dbus';
}

export async function startPrivateBus(): Promise<PrivateBus> {
  if (!DBUS_DAEMON) throw new Error(missingDbusDaemon());
  const dir = await mkdtemp(path.join(tmpdir(), 'sno-relocate-bus-'));
  const configFile = path.join(dir, 'bus.conf');
  await writeFile(configFile, config(path.join(dir, 'system_bus_socket')));
  const daemon = spawn(DBUS_DAEMON, [`--config-file=${configFile}`, '--nofork', '--nopidfile', '--print-address=1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr = collectStderr(daemon);
  // dbus-daemon prints its address once it listens
  const address = await firstLine(daemon, 'dbus-daemon', stderr);
  return {
    address,
    async stop() {
      await stopChild(daemon);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface TestServices {
  /** changes how the services behave from now on */
  configure(scenario: Scenario): Promise<void>;
  /** the calls the services received, in order */
  calls(): Promise<Recorded[]>;
  stop(): Promise<void>;
}

/**
 * Starts the fake systemd and hostnamed in a child process on the bus. `root` is the folder the
 * fake hostnamed writes etc/hostname into, as the real one writes /etc/hostname.
 */
export async function startTestServices(
  bus: PrivateBus,
  options: { root?: string; scenario?: Scenario } = {},
): Promise<TestServices> {
  const child = spawn(process.execPath, ['--import', 'tsx', SERVICE], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DBUS_SYSTEM_BUS_ADDRESS: bus.address,
      TEST_SERVICE_ROOT: options.root ?? '',
      TEST_SERVICE_SCENARIO: JSON.stringify(options.scenario ?? {}),
    },
  });
  const stderr = collectStderr(child);
  const ready = await firstLine(child, 'the test D-Bus service', stderr);
  if (ready !== 'ready') throw new Error(`the test D-Bus service said "${ready}": ${stderr()}`);

  const client = dbus.sessionBus({ busAddress: bus.address });
  client.on('error', () => undefined);
  const control = (await client.getProxyObject(CONTROL_NAME, CONTROL_PATH)).getInterface(CONTROL_INTERFACE);
  return {
    configure: async (scenario) => {
      await control.Configure!(JSON.stringify(scenario));
    },
    calls: async () => JSON.parse((await control.Calls!()) as string) as Recorded[],
    async stop() {
      client.disconnect();
      await stopChild(child);
    },
  };
}

/** A private bus with the test services on it: what most D-Bus tests need. */
export async function startTestBus(
  options: { root?: string; scenario?: Scenario } = {},
): Promise<PrivateBus & { services: TestServices }> {
  const bus = await startPrivateBus();
  try {
    const services = await startTestServices(bus, options);
    return {
      address: bus.address,
      services,
      async stop() {
        await services.stop();
        await bus.stop();
      },
    };
  } catch (err) {
    await bus.stop();
    throw err;
  }
}
