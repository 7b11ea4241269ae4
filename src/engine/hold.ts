/**
 * Hold points, for power-cut tests of a whole node: with SNO_RELOCATE_HOLD_AT naming a point in the
 * agent's environment (a unit drop-in; nothing on a stick can set it), the run stops there, writes
 * the point's name to /run/sno-relocate/held, and waits until the machine loses power. Points:
 * `after:<step>` (the step recorded as done), `state-write:<step>:<status>` (the state file that
 * records the step so is written to its temp file and synced, not yet renamed into place), and
 * `network:checkpoint` (the site network applied under NetworkManager's checkpoint, before the
 * checks and the commit).
 */
import type { Logger } from '../log/logger.js';
import type { RootFs } from '../ports/fs.js';

export const HOLD_ENV = 'SNO_RELOCATE_HOLD_AT';
export const HELD_FILE = '/run/sno-relocate/held';

export type HoldAt = (point: string) => Promise<void>;

export function holdPoints(fs: RootFs, log: Logger, wanted = process.env[HOLD_ENV]): HoldAt {
  return async (point) => {
    if (point !== wanted) return;
    await fs.writeAtomic(HELD_FILE, `${point}\n`, { mode: 0o644 });
    log.warn({ point }, `held at ${point} (${HOLD_ENV}): waiting for the power to go`);
    // a timer keeps the process alive: it ends with the machine, or when the unit is stopped
    await new Promise(() => setInterval(() => undefined, 3_600_000));
  };
}
