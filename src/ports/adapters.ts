/** The real adapters behind the ports that reach outside the filesystem. */
import type { Logger } from '../log/logger.js';
import type { Exec } from './exec.js';
import type { Kube } from './kube.js';
import type { Nmstate } from './nmstate.js';
import { selectNmstate } from './select-nmstate.js';
import type { Systemd } from './systemd.js';
import { connectSystemdBus } from './systemd-dbus.js';

const unavailable = (what: string) => () => {
  throw new Error(`${what} is not available in this build`);
};

export const connectSystemd: (log: Logger) => Promise<Systemd> = connectSystemdBus;
export const createNmstate: (exec: Exec, log: Logger) => Nmstate = selectNmstate;
export const connectKube: (kubeconfigPath: string, log: Logger) => Promise<Kube> = unavailable('the Kubernetes API client');
