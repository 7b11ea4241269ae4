/** What the tests and the test D-Bus service (test/dbus/service.ts) agree on. */

export const CONTROL_NAME = 'org.snorelocate.TestControl';
export const CONTROL_PATH = '/org/snorelocate/TestControl';
export const CONTROL_INTERFACE = 'org.snorelocate.TestControl';

export interface UnitScenario {
  activeState?: string;
  subState?: string;
  /** systemd's Result property of the service */
  result?: string;
  unitFileState?: string;
  /** what the start job ends with: done, failed, timeout, dependency, ...; `never` leaves it running */
  startResult?: string;
  /** send JobRemoved before the reply to StartUnit: the race a client must survive */
  jobRemovedBeforeReply?: boolean;
}

export interface Scenario {
  /** the folder the fake hostnamed writes etc/hostname into (and reads it from at start) */
  root?: string;
  units?: Record<string, UnitScenario>;
  /** jobs systemd is already running when the test starts, as ListJobs lists them (chrony-wait's start) */
  runningJobs?: { unit: string; type: string }[];
}

/** One method call the services received. */
export interface Recorded {
  member: string;
  args: unknown[];
}
