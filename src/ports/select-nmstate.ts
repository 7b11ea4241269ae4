/**
 * Which backend answers the Nmstate port: nmstatectl where it is installed (OpenShift nodes), else
 * NetworkManager's D-Bus API (nodes without nmstate, such as Debian).
 *   SNO_RELOCATE_NMSTATE=nmstatectl|networkmanager   forces one;
 *   SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE=1             (D-Bus backend only) makes an OVS br-ex in the
 *                                                    site network a Linux bridge, for nodes without
 *                                                    Open vSwitch.
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log/logger.js';
import type { Exec } from './exec.js';
import { createNetworkManager } from './networkmanager.js';
import { BR_EX_AS_LINUX_BRIDGE_ENV } from './nm/br-ex-bridge.js';
import type { Nmstate } from './nmstate.js';
import { createNmstatectl } from './nmstatectl.js';

export const NMSTATE_BACKEND_ENV = 'SNO_RELOCATE_NMSTATE';
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

export interface BackendChoice {
  backend: NmstateBackend;
  why: string;
  brExAsLinuxBridge: boolean;
}

const flag = (env: NodeJS.ProcessEnv, name: string): boolean => {
  const value = env[name];
  if (value === undefined || value === '' || value === '0') return false;
  if (value === '1') return true;
  throw new Error(`${name} must be 1 or 0, not "${value}"`);
};

export function chooseBackend(env: NodeJS.ProcessEnv = process.env): BackendChoice {
  const forced = env[NMSTATE_BACKEND_ENV];
  const brExAsLinuxBridge = flag(env, BR_EX_AS_LINUX_BRIDGE_ENV);
  let choice: Omit<BackendChoice, 'brExAsLinuxBridge'>;
  if (forced !== undefined && forced !== '') {
    if (forced !== 'nmstatectl' && forced !== 'networkmanager')
      throw new Error(`${NMSTATE_BACKEND_ENV} must be nmstatectl or networkmanager, not "${forced}"`);
    choice = { backend: forced, why: `${NMSTATE_BACKEND_ENV} says so` };
  } else {
    choice = onPath('nmstatectl', env.PATH)
      ? { backend: 'nmstatectl', why: 'nmstatectl is installed' }
      : { backend: 'networkmanager', why: 'nmstatectl is not installed' };
  }
  if (brExAsLinuxBridge && choice.backend === 'nmstatectl')
    throw new Error(
      `${BR_EX_AS_LINUX_BRIDGE_ENV} works only with NetworkManager's D-Bus API, and nmstatectl was chosen (${choice.why})`,
    );
  return { ...choice, brExAsLinuxBridge };
}

export function selectNmstate(exec: Exec, log: Logger, env: NodeJS.ProcessEnv = process.env): Nmstate {
  const { backend, why, brExAsLinuxBridge } = chooseBackend(env);
  const through = backend === 'nmstatectl' ? 'nmstatectl' : "NetworkManager's D-Bus API";
  const bridge = brExAsLinuxBridge ? `; an OVS br-ex is made a Linux bridge (${BR_EX_AS_LINUX_BRIDGE_ENV})` : '';
  log.info({ backend, brExAsLinuxBridge }, `network changes go through ${through}: ${why}${bridge}`);
  return backend === 'nmstatectl' ? createNmstatectl(exec, log) : createNetworkManager(log, { brExAsLinuxBridge });
}
