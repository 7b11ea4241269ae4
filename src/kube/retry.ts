/**
 * Which API failures are worth another try, and the retries that ride out an API outage. A cluster
 * that was just relocated restarts its API server more than once while operators roll out, and on
 * a single node the API comes back in stages: connections refused, then the server answering before
 * every path is served (custom resources and aggregated APIs answer a bare `404 page not found`, the
 * aggregator `503`), then everything. All of that is weather and passes. A 4xx other than 429 is an
 * answer; a missing object is a 404 whose body is a Kubernetes Status with reason NotFound naming it.
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

interface Status {
  kind?: string;
  reason?: string;
  message?: string;
  details?: { name?: string; kind?: string; group?: string };
}

/** The body of an API error as a Kubernetes Status, when it is one (client-node hands it over as text). */
function statusBody(err: ApiException<unknown>): Status | undefined {
  let body = err.body as unknown;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  return body && typeof body === 'object' && (body as Status).kind === 'Status' ? (body as Status) : undefined;
}

/**
 * A missing object: a 404 carrying a Status with reason NotFound and the object's details (its
 * name). It is an answer. A 404 without that (`404 page not found` as plain text, or "the server
 * could not find the requested resource" for a whole resource path) says the path is not served
 * (yet), not that an object is missing.
 */
export function isNotFound(err: unknown): boolean {
  if (!(err instanceof ApiException) || err.code !== 404) return false;
  const status = statusBody(err);
  return status?.reason === 'NotFound' && Boolean(status.details?.name);
}

/** A 404 for a path the API does not serve (yet): right after an API server starts, or an aggregated API. */
export function isUnserved(err: unknown): boolean {
  return statusOf(err) === 404 && !isNotFound(err);
}

export function isTransient(err: unknown): boolean {
  const status = statusOf(err);
  if (status !== undefined) return TRANSIENT_STATUS.has(status) || isUnserved(err);
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && TRANSIENT_CODES.has(code)) return true;
  // a failure wrapped on its way (discovery names its group version) is as transient as its cause
  if (err.cause !== undefined && isTransient(err.cause)) return true;
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
        reason = body.trim().slice(0, 200);
      }
    } else if (body && typeof body === 'object') reason = String((body as { message?: unknown }).message ?? '');
    const unserved = isUnserved(err) ? ' (the path is not served yet)' : '';
    return `HTTP ${err.code}${reason ? `: ${reason}` : ''}${unserved}`;
  }
  return errorMessage(err);
}

export interface RetryPolicy {
  /** how long one call keeps trying through an outage before its last failure is thrown */
  budgetMs: number;
  firstDelayMs: number;
  maxDelayMs: number;
}

/**
 * The outage budget: an API away for up to five minutes, plus a minute for a restarted API server to
 * serve every path again. The outages the domain step's writes cause stack up on a single node (the
 * openshift-apiserver's rollout, then one or two kube-apiserver restarts), and the platform's own
 * components there are tuned to ride out 180 s without the API.
 */
export const DEFAULT_RETRY: RetryPolicy = { budgetMs: 360_000, firstDelayMs: 100, maxDelayMs: 5_000 };

/** A call that met an outage longer than the budget; the run fails naming the call, and the next run resumes. */
export class OutageBudgetError extends Error {
  constructor(
    readonly budgetMs: number,
    readonly last: unknown,
  ) {
    super(`the API was away longer than the outage budget of ${budgetMs / 1000} s: ${describeFailure(last)}`, {
      cause: last,
    });
    this.name = 'OutageBudgetError';
  }
}

export type Retry = <T>(what: string, fn: () => Promise<T>) => Promise<T>;

/**
 * One outage's two lines, as support reads them (docs/api-outages.md): a warning at the first
 * failure, naming what met it and for how long it is waited out, and one line when it ends, with
 * how long it lasted and how many retries it took: the API answered, or the wait gave up.
 */
export function outageLines(clock: Pick<Clock, 'monotonic'>, log: Logger) {
  let outage: { since: number; retries: number } | undefined;
  return {
    get open(): boolean {
      return outage !== undefined;
    },
    /** a transient failure of `what`: the first one of an outage is logged */
    failed(what: string, err: unknown, budgetMs: number): void {
      if (!outage) {
        outage = { since: clock.monotonic(), retries: 0 };
        const budgetSeconds = Math.round(budgetMs / 1000);
        log.warn(
          { event: 'apiOutageStarted', reason: describeFailure(err), budgetSeconds },
          `the API is away (${describeFailure(err)}) at ${what}: retrying for up to ${budgetSeconds} s`,
        );
      }
      outage.retries += 1;
    },
    /** the outage is over: the API answered, or `what` gave up after `last` */
    ended(what: string, answered: boolean, last?: unknown): void {
      if (!outage) return;
      const seconds = Math.round((clock.monotonic() - outage.since) / 1000);
      const fields = { event: 'apiOutageEnded', outageSeconds: seconds, retries: outage.retries };
      outage = undefined;
      if (answered) log.info(fields, `the API answers again after ${seconds} s`);
      else
        log.warn(
          { ...fields, reason: describeFailure(last) },
          `the API is still away after ${seconds} s: ${what} gives up`,
        );
    },
  };
}

/**
 * Retries that share one view of the API's outages: the first call that meets one logs a warning,
 * the last one waiting logs once the API answers again (and `onBack` runs: discovery asks again).
 * Every retry in between is a debug line. Each call gives up after the budget, with an
 * OutageBudgetError naming its last failure.
 */
export function createRetry(
  clock: Clock,
  log: Logger,
  policy: RetryPolicy = DEFAULT_RETRY,
  onBack: () => void = () => undefined,
): Retry {
  let waiting = 0;
  const outage = outageLines(clock, log);
  const end = (answered: boolean, what: string, last: unknown) => {
    if (waiting > 0 || !outage.open) return;
    if (answered) onBack();
    outage.ended(what, answered, last);
  };
  return async (what, fn) => {
    let deadline: number | undefined;
    let delay = policy.firstDelayMs;
    for (let attempt = 1; ; attempt++) {
      try {
        const value = await fn();
        if (deadline !== undefined) {
          waiting -= 1;
          end(true, what, undefined);
        }
        return value;
      } catch (err) {
        const now = clock.monotonic();
        if (!isTransient(err) || (deadline !== undefined && now >= deadline)) {
          if (deadline !== undefined) {
            waiting -= 1;
            end(!isTransient(err), what, err);
          }
          if (isTransient(err)) throw new OutageBudgetError(policy.budgetMs, err);
          throw err;
        }
        if (deadline === undefined) {
          deadline = now + policy.budgetMs;
          waiting += 1;
        }
        outage.failed(what, err, policy.budgetMs);
        const wait = Math.min(delay, deadline - now);
        log.debug(
          { attempt, retryInMs: Math.round(wait), reason: describeFailure(err) },
          `${what}: transient failure, retrying`,
        );
        await clock.sleep(wait);
        delay = Math.min(delay * 2, policy.maxDelayMs);
      }
    }
  };
}
