/**
 * Which API failures are worth another try, and the bounded backoff that tries again. A cluster
 * that was just relocated restarts its API server more than once while operators roll out, so a
 * refused connection or a 503 is expected and passes; a 4xx other than 429 is an answer, not weather.
 */
import { ApiException } from '@kubernetes/client-node';
import { errorMessage } from '../base/errors.js';
import type { Logger } from '../log/logger.js';
import type { Clock } from '../ports/clock.js';

const TRANSIENT_STATUS = new Set([429, 500, 502, 503, 504]);
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
]);

export function statusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

export function isTransient(err: unknown): boolean {
  const status = statusOf(err);
  if (status !== undefined) return TRANSIENT_STATUS.has(status);
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code ?? (err.cause as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && TRANSIENT_CODES.has(code)) return true;
  // node-fetch reports socket failures as FetchError of type "system"
  return err.name === 'FetchError' || /socket hang up|network timeout/i.test(err.message);
}

/** The API's own words for a failure, without the request it answered (which may carry a secret). */
export function describeFailure(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as unknown;
    let reason = '';
    if (typeof body === 'string') {
      try {
        reason = String((JSON.parse(body) as { message?: unknown }).message ?? '');
      } catch {
        reason = body.slice(0, 200);
      }
    } else if (body && typeof body === 'object') reason = String((body as { message?: unknown }).message ?? '');
    return `HTTP ${err.code}${reason ? `: ${reason}` : ''}`;
  }
  return errorMessage(err);
}

export interface RetryPolicy {
  /** total time spent retrying one call before its last failure is thrown */
  budgetMs: number;
  firstDelayMs: number;
  maxDelayMs: number;
}

/**
 * 240 s per call: the outages the domain step's writes cause stack up on a single node (the
 * openshift-apiserver's rollout, then one or two kube-apiserver restarts), and the platform's own
 * components there are tuned to ride out 180 s without the API.
 */
export const DEFAULT_RETRY: RetryPolicy = { budgetMs: 240_000, firstDelayMs: 100, maxDelayMs: 5_000 };

export async function withRetry<T>(
  clock: Clock,
  log: Logger,
  what: string,
  fn: () => Promise<T>,
  policy: RetryPolicy = DEFAULT_RETRY,
): Promise<T> {
  const deadline = clock.monotonic() + policy.budgetMs;
  let delay = policy.firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const left = deadline - clock.monotonic();
      if (!isTransient(err) || left <= 0) throw err;
      const wait = Math.min(delay, left);
      log.warn(
        { attempt, retryInMs: Math.round(wait), reason: describeFailure(err) },
        `${what}: transient failure, retrying`,
      );
      await clock.sleep(wait);
      delay = Math.min(delay * 2, policy.maxDelayMs);
    }
  }
}
