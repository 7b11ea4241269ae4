/** systemd and systemd-hostnamed, reached over D-Bus (the adapter is in systemd-dbus.ts). */
export interface UnitStatus {
  activeState: string;
  subState: string;
  /** systemd's Result property: success, exit-code, timeout, ... */
  result: string;
  unitFileState: string;
}

export interface Systemd {
  /**
   * reloads systemd (drop-ins written since take effect) and starts the unit, waiting for the start
   * job's result; the unit's enablement is left as it is
   */
  startAndWait(unit: string, timeoutMs: number): Promise<{ jobResult: string }>;
  /**
   * restarts the unit (starts it when it is not running), waiting for the restart job's result;
   * with reload, systemd reloads first, so drop-ins written since take effect
   */
  restartAndWait(unit: string, timeoutMs: number, options?: { reload?: boolean }): Promise<{ jobResult: string }>;
  /** stops the unit, waiting for the stop job's result */
  stopAndWait(unit: string, timeoutMs: number): Promise<{ jobResult: string }>;
  unitStatus(unit: string): Promise<UnitStatus>;
  /** queues poweroff.target as `systemctl poweroff` does (replace-irreversibly), without waiting */
  powerOff(): Promise<void>;
  staticHostname(): Promise<string>;
  setStaticHostname(name: string): Promise<void>;
  close(): void;
}
