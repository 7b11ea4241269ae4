/**
 * What a person is told while the kubelet gate holds kubelet: on a single node the platform
 * Prometheus runs on kubelet, so no alert can say it, and the console, `status` and the journal
 * must. One line: why kubelet is held (no site's node steps have passed yet, or the run that was
 * to pass them failed or was refused, with its reason) and what to do about it.
 */
import { MessageId } from '../log/events.js';
import type { RootFs } from '../ports/fs.js';
import { gateOpenFor, KUBELET_GATE_DROP_IN } from './kubelet-gate.js';

/** where the gate's drop-in is: the MachineConfig's, or the layered OS image's */
const GATE_DROP_INS = ['/etc', '/usr/lib'].map(
  (dir) => `${dir}/systemd/system/kubelet.service.d/${KUBELET_GATE_DROP_IN}`,
);

/** Whether the gate holds kubelet: its drop-in is installed and its marker is gone (closed). */
export async function kubeletHeld(fs: RootFs, stateDir: string): Promise<boolean> {
  const installed = (await Promise.all(GATE_DROP_INS.map((f) => fs.exists(f)))).some(Boolean);
  return installed && (await gateOpenFor(fs, stateDir)) === undefined;
}

/** the run as its state records it, where there is one */
export interface HeldRun {
  site: string;
  result: 'running' | 'succeeded' | 'failed' | 'refused';
  message?: string;
}

const WHY = `journalctl -u sno-relocate MESSAGE_ID=${MessageId.stepFailed}`;

export function kubeletHeldLine(run: HeldRun | undefined): string {
  const held = 'kubelet held by the kubelet gate';
  if (!run || run.result === 'succeeded')
    return `${held} until a site's node steps pass: plug in the site's stick (a filesystem labelled cluster-config); the agent runs at once`;
  const until = `${held} until the node steps of site ${run.site} pass`;
  if (run.result === 'running') return `${until}: the run is under way (sno-relocate status shows its step)`;
  const reason = run.message ? `: ${run.message}` : '';
  return run.result === 'failed'
    ? `${until}; the run failed${reason}. To go on: fix what it names (${WHY}), then plug the stick in again or run sno-relocate run; the steps already done are kept`
    : `${until}; the run was refused${reason}. To go on: bring a stick this node takes, or clear the conflict it names, then plug it in again; nothing was changed`;
}
