/**
 * Reaching the cluster: the kubeconfig read with the client library, and the bounded, logged wait
 * until the API answers a cheap list (kubelet may have started its static pods a moment ago).
 */
import { existsSync } from 'node:fs';
import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { errorMessage, StepError } from '../base/errors.js';
import { API_READY_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { timed, type Logger } from '../log/logger.js';
import { pollUntil, systemClock, type Clock } from '../ports/clock.js';
import { describeFailure, isTransient } from './retry.js';
import { DEFAULT_PROBE_TIMEOUT_MS, timeoutConfiguration } from './transport.js';

export interface ReadyOptions {
  clock?: Clock;
  /** how long to wait for the API to answer; kubelet was just started, so this is minutes */
  readyTimeoutMs?: number;
  /** bound on each readiness probe: a stuck API counts as not answering yet, and the wait goes on */
  probeTimeoutMs?: number;
}

/**
 * A kubeconfig file read with the client library. One that is missing or cannot be read is a failed
 * step (exit 1), the same for run, plan and watch: the node's own appears with its cluster.
 */
export function loadKubeConfig(kubeconfigPath: string): KubeConfig {
  if (!existsSync(kubeconfigPath)) throw new StepError(`kubeconfig ${kubeconfigPath} does not exist`);
  const config = new KubeConfig();
  try {
    config.loadFromFile(kubeconfigPath);
  } catch (err) {
    throw new StepError(`kubeconfig ${kubeconfigPath} cannot be read: ${errorMessage(err)}`, { cause: err });
  }
  return config;
}

/** Waits (bounded, logged) until the API answers a cheap list; a refusal (401, 403) ends the wait at once. */
export async function waitForApi(config: KubeConfig, log: Logger, options: ReadyOptions = {}): Promise<void> {
  const clock = options.clock ?? systemClock;
  const core = new CoreV1Api(timeoutConfiguration(config, options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS));
  const server = config.getCurrentCluster()?.server ?? '(no server)';
  const timeoutMs = options.readyTimeoutMs ?? API_READY_TIMEOUT_SECONDS * 1000;
  let last = '';
  const ready = await timed(log, `waiting for the API at ${server}`, () =>
    pollUntil(
      clock,
      async () => {
        try {
          await core.listNamespace({ limit: 1 });
          return true;
        } catch (err) {
          if (err instanceof ApiException && !isTransient(err))
            throw new StepError(`the API at ${server} refused the agent: ${describeFailure(err)}`, { cause: err });
          const reason = describeFailure(err);
          if (reason !== last) log.info({ server, reason }, 'the API is not answering yet');
          last = reason;
          return undefined;
        }
      },
      { timeoutMs, intervalMs: 200, maxIntervalMs: 5_000 },
    ),
  );
  if (!ready)
    throw new StepError(`the API at ${server} did not answer within ${Math.round(timeoutMs / 1000)} s: ${last}`, {
      retryable: true,
    });
}
