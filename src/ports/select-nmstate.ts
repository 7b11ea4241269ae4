/**
 * Which backend answers the Nmstate port: nmstatectl where it is installed (OpenShift nodes), else
 * NetworkManager's D-Bus API (nodes without nmstate, such as Debian). SNO_RELOCATE_NMSTATE set to
 * `nmstatectl` or `networkmanager` forces one.
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log/logger.js';
import type { Exec } from './exec.js';
import { createNetworkManager } from './networkmanager.js';
import type { Nmstate } from './nmstate.js';
import { createNmstatectl } from './nmstatectl.js';

export type NmstateBackend = 'nmstatectl' | 'networkmanager';

export function onPath(command: string, searchPath = process.env.PATH ?? ''): boolean {
  return searchPath.split(path.delimiter).some((dir) => {
    try {
      accessSync(path.join(dir || '.', command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

export function chooseBackend(env: NodeJS.ProcessEnv = process.env): { backend: NmstateBackend; why: string } {
  const forced = env.SNO_RELOCATE_NMSTATE;
  if (forced !== undefined && forced !== '') {
    if (forced !== 'nmstatectl' && forced !== 'networkmanager') throw new Error(`SNO_RELOCATE_NMSTATE must be nmstatectl or networkmanager, not "${forced}"`);
    return { backend: forced, why: 'SNO_RELOCATE_NMSTATE says so' };
  }
  return onPath('nmstatectl', env.PATH) ? { backend: 'nmstatectl', why: 'nmstatectl is installed' } : { backend: 'networkmanager', why: 'nmstatectl is not installed' };
}

export function selectNmstate(exec: Exec, log: Logger): Nmstate {
  const { backend, why } = chooseBackend();
  log.debug({ backend }, `network changes go through ${backend === 'nmstatectl' ? 'nmstatectl' : "NetworkManager's D-Bus API"}: ${why}`);
  return backend === 'nmstatectl' ? createNmstatectl(exec, log) : createNetworkManager(log);
}
