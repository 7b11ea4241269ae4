/**
 * The cluster as the checks see it: a ClusterSource feeding an ObjectStore (and a recording, when
 * asked), evaluated on demand. Shared by `watch`, `watch --once` and the health step.
 */
import type { ListWatch } from '../ports/kube.js';
import { errorMessage, StepError } from '../base/errors.js';
import type { Logger } from '../log/logger.js';
import type { Clock } from '../ports/clock.js';
import { runChecks } from './checks/index.js';
import type { WatchContext } from './model.js';
import type { Recorder } from './record.js';
import { ClusterSource, type SourceStatus } from './source.js';
import { ObjectStore, type WatchEvent } from './store.js';
import { evaluate, type Evaluation } from './track.js';

export interface ClusterViewOptions {
  clock: Clock;
  log: Logger;
  ctx: WatchContext;
  recorder?: Recorder;
  /** called after each event, for a consumer that reacts to changes */
  onChange?(): void;
  /** called after a list or watch failed (the view logs it already) */
  onSyncError?(resource: string): void;
  resyncMs?: number;
}

export class ClusterView {
  readonly store = new ObjectStore();
  private readonly source: ClusterSource;
  private last: Evaluation = { findings: [], firstSeen: new Map() };

  constructor(
    private readonly api: ListWatch,
    private readonly options: ClusterViewOptions,
  ) {
    options.recorder?.write({ type: 'context', context: options.ctx, at: options.clock.now().toISOString() });
    // an outage is one warning when the first list or watch fails and one line when all list again;
    // every failure in between (each informer backs off and lists again) is a debug line
    const failing = new Set<string>();
    let since = 0;
    const emit = (event: WatchEvent): void => {
      // a kind no longer served has no list to wait for
      if (event.type === 'uninstalled') failing.delete(event.resource);
      this.store.apply(event);
      options.recorder?.write({ ...event, at: options.clock.now().toISOString() });
      options.onChange?.();
    };
    this.source = new ClusterSource(api, {
      clock: options.clock,
      emit,
      onError: (resource, message) => {
        if (failing.size === 0) {
          since = options.clock.monotonic();
          options.log.warn(
            { event: 'apiOutageStarted', resource },
            `watch ${resource}: ${message}; listing again after a backoff until the API answers`,
          );
        } else options.log.debug({ resource }, `watch ${resource}: ${message}; listing again after a backoff`);
        failing.add(resource);
        options.onSyncError?.(resource);
      },
      onSynced: (resource) => {
        if (!failing.delete(resource) || failing.size > 0) return;
        const seconds = Math.round((options.clock.monotonic() - since) / 1000);
        options.log.info(
          { event: 'apiOutageEnded', outageSeconds: seconds },
          `the watched lists answer again after ${seconds} s`,
        );
      },
      ...(options.resyncMs !== undefined && { resyncMs: options.resyncMs }),
    });
  }

  get server(): string {
    return this.api.server;
  }

  start(): void {
    this.source.start();
  }

  /** Waits for a full sync, bounded; the error names what failed last. */
  async synced(timeoutMs: number): Promise<void> {
    try {
      await this.source.synced(AbortSignal.timeout(timeoutMs));
    } catch (err) {
      const status = this.source.snapshotStatus();
      throw new StepError(
        `no full sync with the API at ${this.server} within ${Math.round(timeoutMs / 1000)}s${status.lastError ? `: ${status.lastError}` : ` (${errorMessage(err)})`}`,
        { retryable: true },
      );
    }
  }

  status(): SourceStatus {
    return this.source.snapshotStatus();
  }

  /** Runs the checks over what is observed now; findings keep the time they were first seen. */
  evaluate(): Evaluation {
    const now = this.options.clock.now();
    this.last = evaluate(runChecks(this.store, this.options.ctx), this.last.firstSeen, now);
    this.options.recorder?.write({ type: 'evaluate', at: now.toISOString() });
    return this.last;
  }

  async stop(): Promise<void> {
    await this.source.stop();
    await this.options.recorder?.close();
  }
}
