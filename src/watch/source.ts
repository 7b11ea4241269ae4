/**
 * The cluster as an event source: an informer on CRDs decides which watched kinds exist and starts or
 * stops their informers as CRDs come and go; the packages APIService is watched by name.
 */
import pLimit from 'p-limit';
import type { Clock } from '../ports/clock.js';
import type { ListWatch } from '../ports/kube.js';
import { worthKeeping } from './checks/index.js';
import { DEFAULT_INFORMER_OPTIONS, Informer, type InformerOptions } from './informer.js';
import type { WatchedObject } from './model.js';
import type { WatchedResource } from './projection.js';
import { chooseVersion, crdNameOf, crdVersions, isEstablished, RESOURCE_BY_KEY, RESOURCES } from './resources.js';
import type { WatchEvent } from './store.js';

export interface SourceStatus {
  /** every informer has listed at least once since it started */
  synced: boolean;
  lastSyncAt?: Date;
  /** failures since start, by resource key */
  errors: Record<string, number>;
  lastError?: string;
}

export interface ClusterSourceOptions extends Partial<Omit<InformerOptions, 'clock' | 'listGate'>> {
  clock: Clock;
  emit(event: WatchEvent): void;
  /** each list or watch failure, already described */
  onError?(resource: string, message: string): void;
  /** each list that succeeded, after a failure or not */
  onSynced?(resource: string): void;
}

const LIST_CONCURRENCY = 1;

interface Running {
  version: string;
  informer: Informer;
  listed: boolean;
}

export class ClusterSource {
  private readonly crds = new Map<string, WatchedObject>();
  private readonly running = new Map<string, Running>();
  private readonly status: SourceStatus = { synced: false, errors: {} };
  private readonly waiters = new Set<() => void>();
  private readonly options: InformerOptions;
  private stopped = false;

  constructor(
    private readonly api: ListWatch,
    private readonly opts: ClusterSourceOptions,
  ) {
    // lists run one after another: the peak of parsed pages is what the process keeps as its size
    const lists = pLimit(LIST_CONCURRENCY);
    this.options = { ...DEFAULT_INFORMER_OPTIONS, ...opts, clock: opts.clock, listGate: (list) => lists(list) };
  }

  start(): void {
    for (const r of RESOURCES.filter((x) => x.builtIn)) this.startInformer(r, r.builtIn!.version);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.running.values()].map((r) => r.informer.stop()));
    this.running.clear();
  }

  snapshotStatus(): SourceStatus {
    return { ...this.status, errors: { ...this.status.errors } };
  }

  /** Resolves once every informer running has listed; a CRD that appears later starts one more. */
  synced(signal?: AbortSignal): Promise<void> {
    if (this.isSynced()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = () => {
        this.waiters.delete(done);
        signal?.removeEventListener('abort', abort);
        resolve();
      };
      const abort = () => {
        this.waiters.delete(done);
        reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      signal?.addEventListener('abort', abort, { once: true });
      this.waiters.add(done);
    });
  }

  private isSynced(): boolean {
    return [...this.running.values()].every((r) => r.listed) && this.running.size > 0;
  }

  private checkSynced(): void {
    const synced = this.isSynced();
    this.status.synced = synced;
    if (synced) for (const done of [...this.waiters]) done();
  }

  private startInformer(resource: WatchedResource, version: string): void {
    if (this.stopped) return;
    const entry: Running = {
      version,
      listed: false,
      informer: new Informer(
        this.api,
        resource,
        version,
        {
          // an object with nothing to report is not kept: a change that makes one quiet removes it
          replace: (objects) => {
            if (resource.key === 'crds') this.onCrds(objects, true);
            const kept = objects.filter((o) => worthKeeping(resource.key, o));
            this.opts.emit({ type: 'replace', resource: resource.key, objects: kept });
          },
          upsert: (object) => {
            if (resource.key === 'crds') this.onCrds([object], false);
            const type = worthKeeping(resource.key, object) ? 'upsert' : 'delete';
            this.opts.emit({ type, resource: resource.key, object });
          },
          delete: (object) => {
            if (resource.key === 'crds') {
              this.crds.delete(object.metadata.name);
              this.reconcileInformers();
            }
            this.opts.emit({ type: 'delete', resource: resource.key, object });
          },
          error: (message) => {
            this.status.errors[resource.key] = (this.status.errors[resource.key] ?? 0) + 1;
            this.status.lastError = message;
            this.opts.onError?.(resource.key, message);
          },
          synced: () => {
            this.opts.onSynced?.(resource.key);
            entry.listed = true;
            this.status.lastSyncAt = this.opts.clock.now();
            this.checkSynced();
          },
        },
        this.options,
      ),
    };
    this.running.set(resource.key, entry);
    entry.informer.start();
  }

  private onCrds(objects: WatchedObject[], replace: boolean): void {
    if (replace) this.crds.clear();
    for (const crd of objects) this.crds.set(crd.metadata.name, crd);
    this.reconcileInformers();
  }

  /** Starts informers for kinds whose CRD is established, stops those whose CRD went away or changed version. */
  private reconcileInformers(): void {
    for (const resource of RESOURCES) {
      if (resource.builtIn) continue;
      const crd = this.crds.get(crdNameOf(resource));
      const version = crd && isEstablished(crd) ? chooseVersion(resource, crdVersions(crd)) : undefined;
      const current = this.running.get(resource.key);
      if (current?.version === version) continue;
      if (current) {
        this.running.delete(resource.key);
        void current.informer.stop();
        this.opts.emit({ type: 'uninstalled', resource: resource.key });
      }
      if (version) {
        this.opts.emit({ type: 'installed', resource: resource.key, version });
        this.startInformer(RESOURCE_BY_KEY.get(resource.key)!, version);
      }
    }
    this.checkSynced();
  }
}
