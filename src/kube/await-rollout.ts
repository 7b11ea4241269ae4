/**
 * Waiting out a control-plane rollout a step's writes caused (docs/rollouts.md), bounded by
 * --health-timeout: what still rolls out is said in the step's DETAIL as `status` shows it while the
 * step runs, and named in the error when the time is up.
 */
import { VerificationError } from '../base/errors.js';
import type { Logger } from '../log/logger.js';
import { pollUntil, type Clock } from '../ports/clock.js';

/** What the wait needs of a step's context: its clock, log and the run's progress line, and the bound. */
export interface RolloutWait {
  clock: Clock;
  log: Logger;
  run?: { progress?(message: string): Promise<void> };
  options: { healthTimeoutSeconds: number };
}

export async function awaitRollout(
  ctx: RolloutWait,
  step: string,
  /** what is not rolled out yet; empty once it is */
  unsettled: () => Promise<string[]>,
): Promise<void> {
  let left: string[] = [];
  let shown = '';
  const done = await pollUntil(
    ctx.clock,
    async () => {
      left = await unsettled();
      const now = left.join('; ');
      if (left.length > 0 && now !== shown) {
        shown = now;
        ctx.log.info({ step, waiting: left }, `${step}: waiting for ${now}`);
        await ctx.run?.progress?.(`waiting for ${now}`);
      }
      return left.length === 0 ? true : undefined;
    },
    { timeoutMs: ctx.options.healthTimeoutSeconds * 1000, intervalMs: 1000, maxIntervalMs: 5000 },
  );
  if (!done)
    throw new VerificationError(
      `${step}: not rolled out after ${ctx.options.healthTimeoutSeconds}s: ${left.join('; ')}`,
      {
        step,
        retryable: true,
      },
    );
}
