/**
 * The kubelet gate, in a shape the machine-config daemon (MCD) accepts. kubelet.service stays
 * enabled as OpenShift renders it: the MCD of release-4.17 and older disables every unit a
 * MachineConfig declares disabled on each config it applies, and from release-4.18 it marks the
 * node Degraded when a declared unit's enablement differs from `systemctl is-enabled`
 * (machine-config-operator pkg/daemon/update.go writeUnits, on_disk_validation.go
 * checkUnitEnabled). So the agent never enables or disables kubelet. Instead a drop-in shipped in
 * the factory MachineConfig makes kubelet start only while a marker file in the agent's state
 * folder exists; the marker holds the hash of the site-config whose node steps passed.
 *
 *   - The kubelet step writes the marker (atomically) and then starts kubelet over D-Bus.
 *   - A run of a site-config whose hash the marker does not hold removes it before its first node
 *     step, so a power cut from there on leaves kubelet shut at the next boot.
 *   - sno-relocate-gate.service (`sno-relocate gate`), ordered before kubelet, removes it at boot
 *     when a new trusted site-config is waiting (a second stick), so kubelet does not start on the
 *     old site's settings.
 */
import path from 'node:path';
import type { RootFs } from '../ports/fs.js';

export const GATE_FILE = 'kubelet-gate';
export const DEFAULT_STATE_DIR = '/var/lib/sno-relocate';
export const GATE_UNIT = 'sno-relocate-gate.service';
export const KUBELET_GATE_DROP_IN = '10-sno-relocate-gate.conf';

export const gatePath = (stateDir: string): string => path.posix.join(stateDir, GATE_FILE);

/** The site-config hash the gate is open for, or undefined when it is closed. */
export async function gateOpenFor(fs: RootFs, stateDir: string): Promise<string | undefined> {
  const text = await fs.readText(gatePath(stateDir));
  return text === undefined ? undefined : text.trim();
}

/** Opens the gate for this site-config: written atomically, so a power cut leaves it open or shut. */
export async function openGate(fs: RootFs, stateDir: string, configHash: string): Promise<void> {
  await fs.mkdirp(stateDir, 0o700);
  await fs.writeAtomic(gatePath(stateDir), `${configHash}\n`, { mode: 0o644 });
}

/** Closes the gate unless it is open for this site-config; true when it was open for another one. */
export async function closeGateUnlessFor(fs: RootFs, stateDir: string, configHash: string): Promise<boolean> {
  const openFor = await gateOpenFor(fs, stateDir);
  if (openFor === undefined || openFor === configHash) return false;
  await fs.remove(gatePath(stateDir));
  await fs.syncDir(stateDir);
  return true;
}

/** The kubelet drop-in of the factory MachineConfig: the gate itself. */
export function renderKubeletGateDropIn(stateDir = DEFAULT_STATE_DIR): string {
  return `# Installed by sno-relocate: the kubelet gate. kubelet stays enabled as OpenShift renders it, and
# starts only once sno-relocate has written this marker: the node steps of the site-config it
# names have passed. ${GATE_UNIT} removes it before kubelet starts when a new
# site-config is waiting. A skipped condition is no failure: nothing restarts kubelet in a loop.
[Unit]
Wants=${GATE_UNIT}
After=${GATE_UNIT}
ConditionPathExists=${gatePath(stateDir)}
`;
}
