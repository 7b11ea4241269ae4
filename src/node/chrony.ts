/**
 * chronyd, asked through chronyc over its local command socket (as root, the node's own chronyc):
 * whether it has synchronised the clock (`tracking`: the leap status is "Not synchronised" until
 * it has), a bounded wait for it (`waitsync`, chrony's own loop: max-tries at a one-second
 * interval), then `makestep`, which steps away whatever offset is left at once instead of slewing
 * it for hours (the default configuration steps only in its first updates: `makestep 1.0 3`).
 */
import type { Exec } from '../ports/exec.js';
import type { RootFs } from '../ports/fs.js';
import type { SyncState } from '../base/true-time.js';

const ASK_TIMEOUT_MS = 5_000;

/**
 * chronyd's state; `absent` when there is no chronyc or no chronyd answering it, and under --root
 * (another system's files: this host's chronyd is not its clock).
 */
export async function chronySyncState(fs: RootFs, exec: Exec): Promise<SyncState> {
  if (fs.resolve('/') !== '/') return 'absent';
  let result;
  try {
    result = await exec.run('chronyc', ['-n', 'tracking'], { allowFailure: true, timeoutMs: ASK_TIMEOUT_MS });
  } catch {
    return 'absent';
  }
  if (result.code !== 0) return 'absent';
  const leap = /^Leap status\s*:\s*(.+)$/m.exec(result.stdout)?.[1]?.trim();
  return leap === undefined || leap === 'Not synchronised' ? 'unsynchronised' : 'synchronised';
}

/** Waits up to `timeoutSeconds` for chronyd to synchronise, then steps the clock; whether it did. */
export async function chronyWaitSync(exec: Exec, timeoutSeconds: number): Promise<boolean> {
  const waited = await exec.run('chronyc', ['-n', 'waitsync', String(timeoutSeconds), '0', '0', '1'], {
    allowFailure: true,
    timeoutMs: (timeoutSeconds + 10) * 1000,
  });
  if (waited.code !== 0) return false;
  await exec.run('chronyc', ['-n', 'makestep'], { timeoutMs: ASK_TIMEOUT_MS });
  return true;
}
