/**
 * One resource followed the way client-go's reflector does it: a paged list, then a watch from the
 * list's resourceVersion (bookmarks on, server-side timeout), again and again; after any failure a
 * backoff and a fresh list, which is also the periodic resync. Built on the ListWatch port (paged
 * lists and single watches, src/kube/list-watch.ts) rather than client-node's ListWatch, which
 * keeps whole objects (a CSV with its icon and install strategy), stops for good after the first
 * error and never resyncs.
 */
import { describeFailure } from '../kube/retry.js';
import type { Clock } from '../ports/clock.js';
import type { ListWatch } from '../ports/kube.js';
import type { WatchedObject } from './model.js';
import type { RawObject, WatchedResource } from './projection.js';

export interface InformerSink {
  replace(objects: WatchedObject[]): void;
  upsert(object: WatchedObject): void;
  delete(object: WatchedObject): void;
  /** a list or watch failed; the informer backs off and lists again */
  error(message: string): void;
  /** a list succeeded: the resource is in sync */
  synced(): void;
}

export interface InformerOptions {
  clock: Clock;
  /** a full list at least this often, even when watches run fine */
  resyncMs: number;
  pageSize: number;
  firstBackoffMs: number;
  maxBackoffMs: number;
  /** runs each full list; shared, it lets one list at a time hold its pages in memory */
  listGate<T>(list: () => Promise<T>): Promise<T>;
}

export const DEFAULT_INFORMER_OPTIONS: Omit<InformerOptions, 'clock' | 'listGate'> = {
  resyncMs: 10 * 60_000,
  pageSize: 250,
  firstBackoffMs: 500,
  maxBackoffMs: 30_000,
};

class Gone extends Error {}

interface WatchEventLine {
  type?: string;
  object?: RawObject & { code?: number; message?: string };
}

export class Informer {
  private stopped = false;
  private readonly abort = new AbortController();
  private request: AbortController | undefined;
  private running: Promise<void> | undefined;

  /**
   * `api`'s request bound limits each list page, and is the grace a watch gets past its server-side
   * timeout: a stuck API fails the list (backoff, list again) instead of holding the informer for good
   */
  constructor(
    private readonly api: ListWatch,
    private readonly resource: WatchedResource,
    private readonly version: string,
    private readonly sink: InformerSink,
    private readonly options: InformerOptions,
  ) {}

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.request?.abort();
    await this.running;
  }

  private get collection() {
    const { group, plural, fieldSelector } = this.resource;
    return { group, version: this.version, plural, ...(fieldSelector && { fieldSelector }) };
  }

  private async run(): Promise<void> {
    let backoff = this.options.firstBackoffMs;
    while (!this.stopped) {
      try {
        const listedAt = this.options.clock.monotonic();
        let resourceVersion = await this.options.listGate(() => this.list());
        this.sink.synced();
        backoff = this.options.firstBackoffMs;
        while (!this.stopped && this.options.clock.monotonic() - listedAt < this.options.resyncMs) {
          resourceVersion = await this.watchOnce(
            resourceVersion,
            Math.ceil((this.options.resyncMs - (this.options.clock.monotonic() - listedAt)) / 1000),
          );
        }
      } catch (err) {
        if (this.stopped) return;
        if (!(err instanceof Gone)) {
          this.sink.error(`${this.resource.kind}: ${describeFailure(err)}`);
          await this.options.clock.sleep(backoff, this.abort.signal).catch(() => undefined);
          backoff = Math.min(backoff * 2, this.options.maxBackoffMs);
        }
      }
    }
  }

  private async list(): Promise<string> {
    const objects: WatchedObject[] = [];
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.api.listPage(this.collection, {
        limit: this.options.pageSize,
        ...(continueToken && { continue: continueToken }),
      });
      for (const item of page.items as RawObject[]) {
        const projected = this.resource.project(item);
        if (projected) objects.push(projected);
      }
      continueToken = page.continue;
      resourceVersion = page.resourceVersion ?? resourceVersion;
    } while (continueToken && !this.stopped);
    this.sink.replace(objects);
    return resourceVersion;
  }

  /**
   * Resolves with the last resourceVersion seen when the server ends the watch (or stop() ends it);
   * rejects on failure, and when the watch outlives its server-side timeout by the request bound:
   * an API that stopped answering keeps the connection open and silent.
   */
  private watchOnce(resourceVersion: string, timeoutSeconds: number): Promise<string> {
    let latest = resourceVersion;
    let gone = false;
    const serverTimeoutSeconds = Math.max(1, Math.min(timeoutSeconds, 300 + Math.floor(Math.random() * 300)));
    const graceMs = this.api.requestTimeoutMs;
    return new Promise<string>((resolve, reject) => {
      let request: AbortController | undefined;
      let settled = false;
      const watchdog = new AbortController();
      const settle = (outcome: () => void): void => {
        if (settled) return;
        settled = true;
        watchdog.abort();
        this.abort.signal.removeEventListener('abort', onStop);
        if (this.request === request) this.request = undefined;
        request?.abort();
        outcome();
      };
      const onStop = (): void => settle(() => resolve(latest));
      const onEvent = (type: string, raw: unknown): void => {
        const object = raw as WatchEventLine['object'];
        if (!object || settled) return;
        if (type === 'ERROR') {
          // 410: the version is too old for a watch; a fresh list follows
          if (object.code === 410) gone = true;
          else settle(() => reject(new Error(`watch error ${object.code ?? ''}: ${object.message ?? 'unknown'}`)));
          return;
        }
        latest = object.metadata?.resourceVersion ?? latest;
        if (type === 'BOOKMARK') return;
        const projected = this.resource.project(object);
        if (type === 'DELETED' || !projected)
          this.sink.delete(
            projected ?? {
              metadata: {
                name: object.metadata?.name ?? '',
                ...(object.metadata?.namespace && { namespace: object.metadata.namespace }),
              },
            },
          );
        else this.sink.upsert(projected);
      };
      const onDone = (err: unknown): void => {
        settle(() => {
          if (gone) reject(new Gone());
          else if (err && !this.stopped) reject(err);
          else resolve(latest);
        });
      };
      if (this.abort.signal.aborted) return onStop();
      this.abort.signal.addEventListener('abort', onStop, { once: true });
      void this.options.clock.sleep(serverTimeoutSeconds * 1000 + graceMs, watchdog.signal).then(
        () =>
          settle(() =>
            reject(
              new Error(
                `the watch did not end within ${serverTimeoutSeconds} s and ${graceMs / 1000} s of grace: the API stopped answering`,
              ),
            ),
          ),
        () => undefined,
      );
      const query = { resourceVersion, timeoutSeconds: serverTimeoutSeconds };
      void this.api.watch(this.collection, query, onEvent, onDone).then(
        (controller) => {
          // a watch that connects after it was given up (or the informer stopped) is closed at once
          if (settled) controller.abort();
          else this.request = request = controller;
        },
        (err: unknown) => settle(() => reject(err)),
      );
    });
  }
}
