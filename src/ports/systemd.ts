/** systemd and systemd-hostnamed, reached over D-Bus (the adapter is in systemd-dbus.ts). */
export interface UnitStatus {
  activeState: string;
  subState: string;
  /** systemd's Result property: success, exit-code, timeout, ... */
  result: string;
  unitFileState: string;
}

export interface Systemd {
  /** enables the unit's install links and starts it, waiting for the start job's result */
  enableAndStart(unit: string, timeoutMs: number): Promise<{ jobResult: string }>;
  unitStatus(unit: string): Promise<UnitStatus>;
  staticHostname(): Promise<string>;
  setStaticHostname(name: string): Promise<void>;
  close(): void;
}
