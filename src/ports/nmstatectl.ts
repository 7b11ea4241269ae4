/**
 * The Nmstate port through the nmstatectl command line (nmstate 1.x and 2.x share this grammar):
 *   nmstatectl show --json
 *   nmstatectl apply --no-commit --timeout N      (desired state on stdin)
 *   nmstatectl commit CHECKPOINT | nmstatectl rollback CHECKPOINT (always by name: never "the last one")
 * `apply --no-commit` leaves a NetworkManager checkpoint that NetworkManager rolls back by itself
 * when nobody commits it within N seconds. nmstate 2.x logs "Created checkpoint <path>" on stderr,
 * nmstate 1.x printed the path as the last line of its output: the path is read from both.
 *
 * `show` costs a few hundred milliseconds on a node (NetworkManager, netlink and the OVS database
 * are all asked), and the engine plans every node step before the run and again right before each
 * step. A `show` within SHOW_REUSE_MS of the previous one, with no apply, commit or rollback in
 * between, is answered from it; a check that retries waits longer than that between reads.
 */
import yaml from 'js-yaml';
import type { NmstateState } from '../base/nmstate.js';
import type { Logger } from '../log/logger.js';
import { type Clock, systemClock } from './clock.js';
import type { Exec } from './exec.js';
import type { Nmstate } from './nmstate.js';

const NMSTATECTL = 'nmstatectl';
const CHECKPOINT = /\/org\/freedesktop\/NetworkManager\/Checkpoint\/\d+/g;
/** activation of bonds and OVS bridges can take a while; beyond this the checkpoint still protects the node */
const MIN_APPLY_WAIT_MS = 180_000;
const SHOW_REUSE_MS = 500;

export function parseCheckpoint(output: string): string | undefined {
  return output.match(CHECKPOINT)?.at(-1);
}

function parseShow(stdout: string): NmstateState {
  let state: unknown;
  try {
    state = JSON.parse(stdout);
  } catch {
    throw new Error(`${NMSTATECTL} show --json printed no JSON: ${stdout.slice(0, 200)}`);
  }
  if (state === null || typeof state !== 'object' || Array.isArray(state))
    throw new Error(`${NMSTATECTL} show --json printed no state object`);
  const interfaces = (state as { interfaces?: unknown }).interfaces;
  if (interfaces !== undefined && !Array.isArray(interfaces))
    throw new Error(`${NMSTATECTL} show --json: interfaces is not a list`);
  return state as NmstateState;
}

export function createNmstatectl(exec: Exec, log: Logger, clock: Clock = systemClock): Nmstate {
  let last: { at: number; state: NmstateState } | undefined;
  return {
    async show() {
      if (last === undefined || clock.monotonic() - last.at >= SHOW_REUSE_MS) {
        const { stdout } = await exec.run(NMSTATECTL, ['show', '--json']);
        last = { at: clock.monotonic(), state: parseShow(stdout) };
      }
      return structuredClone(last.state);
    },
    // nmstatectl is nmstate itself: what the site-config's validation let through, it applies
    unsupported: () => [],

    async apply(state, { timeoutSeconds }) {
      last = undefined;
      const { stdout, stderr } = await exec.run(
        NMSTATECTL,
        ['apply', '--no-commit', '--timeout', String(timeoutSeconds)],
        {
          input: yaml.dump(state, { noRefs: true }),
          timeoutMs: Math.max(MIN_APPLY_WAIT_MS, timeoutSeconds * 1000),
        },
      );
      const checkpoint = parseCheckpoint(`${stdout}\n${stderr}`);
      if (checkpoint) return { checkpoint };
      // without the path the change cannot be committed; a rollback without one would undo whichever
      // checkpoint is newest, maybe not this one, so NetworkManager's own timeout undoes it
      log.warn({ stderr: stderr.slice(-500) }, 'nmstatectl apply named no checkpoint');
      throw new Error(
        `${NMSTATECTL} apply --no-commit named no checkpoint; NetworkManager rolls the change back by itself within ${timeoutSeconds} s`,
      );
    },

    async commit(checkpoint) {
      last = undefined;
      await exec.run(NMSTATECTL, ['commit', checkpoint]);
    },

    async rollback(checkpoint) {
      last = undefined;
      await exec.run(NMSTATECTL, ['rollback', checkpoint]);
    },
  };
}
