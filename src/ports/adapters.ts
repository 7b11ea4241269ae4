/** The real adapters behind the ports that reach outside the filesystem. */
import { existsSync } from 'node:fs';
import { StepError } from '../engine/errors.js';
import type { Logger } from '../log/logger.js';
import type { Exec } from './exec.js';
import type { Kube } from './kube.js';
import type { Nmstate } from './nmstate.js';
import { selectNmstate } from './select-nmstate.js';
import type { Systemd } from './systemd.js';
import { connectSystemdBus } from './systemd-dbus.js';

export const connectSystemd: (log: Logger) => Promise<Systemd> = connectSystemdBus;
export const createNmstate: (exec: Exec, log: Logger) => Nmstate = selectNmstate;
/** The client library is loaded on first use: `--version` and the node-only commands never pay for it. */
export const connectKube = async (
  kubeconfigPath: string,
  log: Logger,
  options: { readyTimeoutMs?: number } = {},
): Promise<Kube> => {
  // checked before the import: with no kubeconfig there is no cluster to reach, so fail at once
  if (!existsSync(kubeconfigPath)) throw new StepError(`kubeconfig ${kubeconfigPath} does not exist`);
  const client = await import('../kube/client.js');
  return client.connectKube(kubeconfigPath, log, options);
};
