/**
 * The test stand-ins for systemd (org.freedesktop.systemd1) and systemd-hostnamed
 * (org.freedesktop.hostname1), served with dbus-next on the bus named by DBUS_SYSTEM_BUS_ADDRESS.
 * They implement the members the agent uses with systemd's own signatures, names, object paths and
 * error names, so a wrong signature or a missed signal fails here as it would on a node. Tests steer
 * them through org.snorelocate.TestControl (see test/dbus/bus.ts). Prints "ready" once it owns its
 * names.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import dbus from 'dbus-next';
import {
  CONTROL_INTERFACE,
  CONTROL_NAME,
  CONTROL_PATH,
  type Recorded,
  type Scenario,
  type UnitScenario,
} from './protocol.js';

const { Interface } = dbus.interface;
const DBusError = dbus.DBusError;

const MANAGER_PATH = '/org/freedesktop/systemd1';
// systemd's job modes (systemd src/core/job-mode.c job_mode_table)
const JOB_MODES = new Set([
  'replace',
  'fail',
  'isolate',
  'ignore-dependencies',
  'ignore-requirements',
  'flush',
  'triggering',
  'restart-dependencies',
  'replace-irreversibly',
]);

interface UnitRecord {
  name: string;
  activeState: string;
  subState: string;
  result: string;
  unitFileState: string;
  startResult: string;
  jobRemovedBeforeReply: boolean;
}

let scenario: Scenario = JSON.parse(process.env.TEST_SERVICE_SCENARIO || '{}') as Scenario;
if (!scenario.root && process.env.TEST_SERVICE_ROOT) scenario = { ...scenario, root: process.env.TEST_SERVICE_ROOT };
const calls: Recorded[] = [];
const record = (member: string, ...args: unknown[]) => calls.push({ member, args });

/** systemd's object path escaping: every byte outside [A-Za-z0-9] becomes _xx */
const unitPath = (name: string) =>
  `${MANAGER_PATH}/unit/${[...Buffer.from(name)].map((b) => (/[A-Za-z0-9]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `_${b.toString(16).padStart(2, '0')}`)).join('')}`;

const defaults = (name: string, s: UnitScenario = {}): UnitRecord => ({
  name,
  activeState: s.activeState ?? 'inactive',
  subState: s.subState ?? 'dead',
  result: s.result ?? 'success',
  unitFileState: s.unitFileState ?? 'disabled',
  startResult: s.startResult ?? 'done',
  jobRemovedBeforeReply: s.jobRemovedBeforeReply ?? false,
});

const bus = dbus.systemBus();
bus.on('error', (err: Error) => {
  process.stderr.write(`test service: bus error: ${err.message}\n`);
  process.exit(1);
});
let units = new Map<string, UnitRecord>();
let nextJob = 1;
/** the queued jobs, as systemd's ListJobs returns them: id, unit, type, state, job path, unit path */
let jobs = new Map<number, [number, string, string, string, string, string]>();

class UnitInterface extends Interface {
  constructor(private readonly unit: UnitRecord) {
    super('org.freedesktop.systemd1.Unit');
  }
  get Id() {
    return this.unit.name;
  }
  get LoadState() {
    return 'loaded';
  }
  get ActiveState() {
    return this.unit.activeState;
  }
  get SubState() {
    return this.unit.subState;
  }
  get UnitFileState() {
    return this.unit.unitFileState;
  }
}
UnitInterface.configureMembers({
  properties: {
    Id: { signature: 's', access: 'read' },
    LoadState: { signature: 's', access: 'read' },
    ActiveState: { signature: 's', access: 'read' },
    SubState: { signature: 's', access: 'read' },
    UnitFileState: { signature: 's', access: 'read' },
  },
});

class ServiceInterface extends Interface {
  constructor(private readonly unit: UnitRecord) {
    super('org.freedesktop.systemd1.Service');
  }
  get Result() {
    return this.unit.result;
  }
}
ServiceInterface.configureMembers({ properties: { Result: { signature: 's', access: 'read' } } });

const exported = new Set<string>();
function loadUnit(name: string): UnitRecord {
  let unit = units.get(name);
  if (!unit) {
    unit = defaults(name, scenario.units?.[name]);
    units.set(name, unit);
  }
  const objectPath = unitPath(name);
  if (!exported.has(objectPath)) {
    // the interfaces read through the record, so a reconfigured scenario shows at once
    bus.export(objectPath, new UnitInterface(unit));
    if (name.endsWith('.service')) bus.export(objectPath, new ServiceInterface(unit));
    exported.add(objectPath);
  }
  return unit;
}

class Manager extends Interface {
  constructor() {
    super('org.freedesktop.systemd1.Manager');
  }
  Subscribe() {
    record('Subscribe');
  }
  Unsubscribe() {
    record('Unsubscribe');
  }
  Reload() {
    record('Reload');
  }
  LoadUnit(name: string) {
    record('LoadUnit', name);
    loadUnit(name);
    return unitPath(name);
  }
  GetUnit(name: string) {
    record('GetUnit', name);
    if (!units.has(name)) throw new DBusError('org.freedesktop.systemd1.NoSuchUnit', `Unit ${name} not loaded.`);
    return unitPath(name);
  }
  EnableUnitFiles(files: string[], runtime: boolean, force: boolean) {
    record('EnableUnitFiles', files, runtime, force);
    const changes: [string, string, string][] = [];
    for (const file of files) {
      const unit = loadUnit(file);
      if (unit.unitFileState === 'masked')
        throw new DBusError('org.freedesktop.systemd1.UnitMasked', `Unit file ${file} is masked.`);
      if (unit.unitFileState !== 'enabled') {
        changes.push([
          'symlink',
          `/etc/systemd/system/multi-user.target.wants/${file}`,
          `/usr/lib/systemd/system/${file}`,
        ]);
      }
      unit.unitFileState = runtime ? 'enabled-runtime' : 'enabled';
    }
    return [true, changes];
  }
  StartUnit(name: string, mode: string) {
    record('StartUnit', name, mode);
    return this.queueJob(name, mode);
  }
  /** systemd's RestartUnit: stops the unit when it runs, then starts it; one job either way */
  RestartUnit(name: string, mode: string) {
    record('RestartUnit', name, mode);
    return this.queueJob(name, mode);
  }
  /** systemd's StopUnit: the unit inactive once its stop job is done */
  StopUnit(name: string, mode: string) {
    record('StopUnit', name, mode);
    return this.queueJob(name, mode, 'stop');
  }
  private queueJob(name: string, mode: string, kind: 'start' | 'stop' = 'start') {
    if (!JOB_MODES.has(mode))
      throw new DBusError('org.freedesktop.DBus.Error.InvalidArgs', `Job mode ${mode} invalid.`);
    const unit = loadUnit(name);
    if (unit.unitFileState === 'masked')
      throw new DBusError('org.freedesktop.systemd1.UnitMasked', `Unit ${name} is masked.`);
    const id = nextJob++;
    const job = `${MANAGER_PATH}/job/${id}`;
    // queued behind the running jobs a scenario names, as kubelet's start waits behind chrony-wait's,
    // a job is "waiting"; otherwise it runs at once (systemd's job states: "waiting", "running")
    jobs.set(id, [id, name, kind, scenario.runningJobs?.length ? 'waiting' : 'running', job, unitPath(name)]);
    const finish = () => {
      jobs.delete(id);
      if (kind === 'stop') {
        Object.assign(unit, { activeState: 'inactive', subState: 'dead', result: 'success' });
        this.JobRemoved(id, job, name, 'done');
        return;
      }
      if (unit.startResult === 'done')
        Object.assign(unit, { activeState: 'active', subState: 'running', result: 'success' });
      else
        Object.assign(unit, {
          activeState: 'failed',
          subState: 'failed',
          result: unit.startResult === 'timeout' ? 'timeout' : 'exit-code',
        });
      this.JobRemoved(id, job, name, unit.startResult);
    };
    this.JobNew(id, job, name);
    if (unit.startResult === 'never') return job;
    if (unit.jobRemovedBeforeReply) finish();
    else setImmediate(finish);
    return job;
  }
  ListJobs() {
    record('ListJobs');
    return [...jobs.values()];
  }
  JobNew(id: number, job: string, unit: string) {
    return [id, job, unit];
  }
  JobRemoved(id: number, job: string, unit: string, result: string) {
    return [id, job, unit, result];
  }
}
Manager.configureMembers({
  methods: {
    Subscribe: {},
    Unsubscribe: {},
    Reload: {},
    LoadUnit: { inSignature: 's', outSignature: 'o' },
    GetUnit: { inSignature: 's', outSignature: 'o' },
    EnableUnitFiles: { inSignature: 'asbb', outSignature: 'ba(sss)' },
    StartUnit: { inSignature: 'ss', outSignature: 'o' },
    RestartUnit: { inSignature: 'ss', outSignature: 'o' },
    StopUnit: { inSignature: 'ss', outSignature: 'o' },
    ListJobs: { outSignature: 'a(usssoo)' },
  },
  signals: {
    JobNew: { signature: 'uos' },
    JobRemoved: { signature: 'uoss' },
  },
});

// hostnamed's own rule (hostname_is_valid): 1-64 characters, dot-separated labels of letters, digits and '-'
const validHostname = (name: string) =>
  name.length <= 64 && name.split('.').every((label) => /^[A-Za-z0-9-]+$/.test(label));

const hostnameFile = () => (scenario.root ? path.join(scenario.root, 'etc/hostname') : undefined);
function readStaticHostname(): string {
  const file = hostnameFile();
  if (!file) return '';
  try {
    return (
      readFileSync(file, 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .find((l) => l && !l.startsWith('#')) ?? ''
    );
  } catch {
    return '';
  }
}

class Hostname1 extends Interface {
  constructor() {
    super('org.freedesktop.hostname1');
  }
  get Hostname() {
    return readStaticHostname() || 'localhost';
  }
  get StaticHostname() {
    return readStaticHostname();
  }
  SetStaticHostname(name: string, interactive: boolean) {
    record('SetStaticHostname', name, interactive);
    if (name !== '' && !validHostname(name))
      throw new DBusError('org.freedesktop.DBus.Error.InvalidArgs', `Invalid static hostname '${name}'`);
    const file = hostnameFile();
    if (!file) return;
    if (name === '') return rmSync(file, { force: true });
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(`${file}.tmp`, `${name}\n`);
    renameSync(`${file}.tmp`, file);
  }
}
Hostname1.configureMembers({
  properties: {
    Hostname: { signature: 's', access: 'read' },
    StaticHostname: { signature: 's', access: 'read' },
  },
  methods: { SetStaticHostname: { inSignature: 'sb' } },
});

class Control extends Interface {
  constructor() {
    super(CONTROL_INTERFACE);
  }
  /** a fresh world: the given scenario, units back to their defaults, no calls recorded */
  Configure(json: string) {
    scenario = JSON.parse(json) as Scenario;
    const fresh = new Map<string, UnitRecord>();
    for (const name of new Set([...units.keys(), ...Object.keys(scenario.units ?? {})])) {
      const unit = units.get(name) ?? defaults(name);
      Object.assign(unit, defaults(name, scenario.units?.[name]));
      fresh.set(name, unit);
    }
    units = fresh;
    jobs = new Map();
    for (const { unit, type } of scenario.runningJobs ?? []) {
      const id = nextJob++;
      jobs.set(id, [id, unit, type, 'running', `${MANAGER_PATH}/job/${id}`, unitPath(unit)]);
    }
    calls.length = 0;
  }
  Calls() {
    return JSON.stringify(calls);
  }
}
Control.configureMembers({ methods: { Configure: { inSignature: 's' }, Calls: { outSignature: 's' } } });

bus.export(MANAGER_PATH, new Manager());
bus.export('/org/freedesktop/hostname1', new Hostname1());
bus.export(CONTROL_PATH, new Control());
for (const name of ['org.freedesktop.systemd1', 'org.freedesktop.hostname1', CONTROL_NAME]) {
  await bus.requestName(name, dbus.NameFlag.DO_NOT_QUEUE);
}
process.on('SIGTERM', () => {
  bus.disconnect();
  process.exit(0);
});
process.stdout.write('ready\n');
