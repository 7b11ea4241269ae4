/** Time, behind a port so that polls and backoffs can be driven in tests. */
import { setTimeout as delay } from 'node:timers/promises';

export interface Clock {
  now(): Date;
  /** monotonic milliseconds, for durations and deadlines */
  monotonic(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => new Date(),
  monotonic: () => performance.now(),
  sleep: (ms, signal) => delay(ms, undefined, signal ? { signal } : undefined),
};

/**
 * Polls `probe` until it returns a value or the deadline passes; each wait
 * grows from `intervalMs` up to `maxIntervalMs`.
 */
export async function pollUntil<T>(
  clock: Clock,
  probe: () => Promise<T | undefined>,
  {
    timeoutMs,
    intervalMs = 250,
    maxIntervalMs = 5000,
    signal,
  }: { timeoutMs: number; intervalMs?: number; maxIntervalMs?: number; signal?: AbortSignal },
): Promise<T | undefined> {
  const deadline = clock.monotonic() + timeoutMs;
  let wait = intervalMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    const left = deadline - clock.monotonic();
    if (left <= 0 || signal?.aborted) return undefined;
    await clock.sleep(Math.min(wait, left));
    wait = Math.min(wait * 2, maxIntervalMs);
  }
}

/**
 * Polls `probe` until it has returned a value at every poll for `heldMs` on end (a poll that
 * returns undefined starts the count again, after `onLost` when it had begun), or the deadline
 * passes; the last value, or undefined.
 */
export async function pollHeld<T>(
  clock: Clock,
  probe: () => Promise<T | undefined>,
  {
    heldMs,
    onLost,
    ...poll
  }: { heldMs: number; onLost?: () => void; timeoutMs: number; intervalMs?: number; maxIntervalMs?: number },
): Promise<T | undefined> {
  let since: number | undefined;
  return pollUntil(
    clock,
    async () => {
      const value = await probe();
      if (value === undefined) {
        if (since !== undefined) onLost?.();
        since = undefined;
        return undefined;
      }
      since ??= clock.monotonic();
      return clock.monotonic() - since >= heldMs ? value : undefined;
    },
    poll,
  );
}
