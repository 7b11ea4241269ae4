import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log/logger.js';
import { createExec } from './exec.js';
import { chooseBackend, onPath, selectNmstate } from './select-nmstate.js';

/** a PATH folder holding an executable nmstatectl */
function pathWithNmstatectl(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'nmstatectl-path-'));
  writeFileSync(path.join(dir, 'nmstatectl'), '#!/bin/sh\nexit 0\n');
  chmodSync(path.join(dir, 'nmstatectl'), 0o755);
  return dir;
}
const EMPTY = mkdtempSync(path.join(tmpdir(), 'empty-path-'));

describe('chooseBackend', () => {
  it('takes nmstatectl where it is on PATH, NetworkManager over D-Bus where it is not', () => {
    expect(chooseBackend({ PATH: `${EMPTY}:${pathWithNmstatectl()}` })).toEqual({
      backend: 'nmstatectl',
      why: 'nmstatectl is installed',
      brExAsLinuxBridge: false,
    });
    expect(chooseBackend({ PATH: EMPTY })).toEqual({
      backend: 'networkmanager',
      why: 'nmstatectl is not installed',
      brExAsLinuxBridge: false,
    });
  });

  it('does not count a file that is not executable', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nmstatectl-path-'));
    writeFileSync(path.join(dir, 'nmstatectl'), '');
    expect(onPath('nmstatectl', dir)).toBe(false);
  });

  it('follows SNO_RELOCATE_NMSTATE either way, and refuses other values naming the variable', () => {
    expect(chooseBackend({ PATH: pathWithNmstatectl(), SNO_RELOCATE_NMSTATE: 'networkmanager' }).backend).toBe(
      'networkmanager',
    );
    expect(chooseBackend({ PATH: EMPTY, SNO_RELOCATE_NMSTATE: 'nmstatectl' })).toMatchObject({
      backend: 'nmstatectl',
      why: 'SNO_RELOCATE_NMSTATE says so',
    });
    expect(() => chooseBackend({ PATH: EMPTY, SNO_RELOCATE_NMSTATE: 'nmcli' })).toThrow(
      'SNO_RELOCATE_NMSTATE must be nmstatectl or networkmanager, not "nmcli"',
    );
  });

  it('makes br-ex a Linux bridge only when asked, and only through NetworkManager', () => {
    expect(chooseBackend({ PATH: EMPTY, SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE: '1' }).brExAsLinuxBridge).toBe(true);
    expect(chooseBackend({ PATH: EMPTY, SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE: '0' }).brExAsLinuxBridge).toBe(false);
    expect(() => chooseBackend({ PATH: EMPTY, SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE: 'yes' })).toThrow(
      'SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE must be 1 or 0, not "yes"',
    );
    expect(() => chooseBackend({ PATH: pathWithNmstatectl(), SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE: '1' })).toThrow(
      /works only with NetworkManager's D-Bus API, and nmstatectl was chosen \(nmstatectl is installed\)/,
    );
  });
});

describe('selectNmstate', () => {
  it('says once which backend answers and why', () => {
    const lines: string[] = [];
    const log = createLogger({ write: (l) => lines.push(l), journal: false });
    selectNmstate(createExec(log), log, { PATH: EMPTY });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("network changes go through NetworkManager's D-Bus API: nmstatectl is not installed");
  });
});
