/**
 * The watched objects in memory, fed by events from the cluster or from a recording. Events are
 * plain data, so the same sequence always leaves the same snapshot.
 */
import type { Snapshot, WatchContext, WatchedObject } from './model.js';
import { RESOURCE_BY_KEY } from './resources.js';

export type WatchEvent =
  | { type: 'installed'; resource: string; version: string }
  | { type: 'uninstalled'; resource: string }
  /** a full list: what is not in it is gone */
  | { type: 'replace'; resource: string; objects: WatchedObject[] }
  | { type: 'upsert'; resource: string; object: WatchedObject }
  | { type: 'delete'; resource: string; object: WatchedObject }
  /** the live watcher evaluated its checks here; a replay evaluates at the same points */
  | { type: 'evaluate' }
  /** the context the checks were given: a replay uses it too */
  | { type: 'context'; context: WatchContext };

const keyOf = (obj: WatchedObject): string => `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;

export class ObjectStore implements Snapshot {
  private readonly objects = new Map<string, Map<string, WatchedObject>>();
  private readonly served = new Map<string, string>();
  /** grows with every change, so a consumer can tell whether anything happened */
  revision = 0;

  apply(event: WatchEvent): void {
    if (event.type === 'evaluate' || event.type === 'context') return;
    if (!RESOURCE_BY_KEY.has(event.resource)) throw new Error(`unknown watched resource "${event.resource}"`);
    this.revision++;
    switch (event.type) {
      case 'installed':
        this.served.set(event.resource, event.version);
        return;
      case 'uninstalled':
        this.served.delete(event.resource);
        this.objects.delete(event.resource);
        return;
      case 'replace':
        this.objects.set(event.resource, new Map(event.objects.map((o) => [keyOf(o), o])));
        return;
      case 'upsert':
        this.bucket(event.resource).set(keyOf(event.object), event.object);
        return;
      case 'delete':
        this.bucket(event.resource).delete(keyOf(event.object));
        return;
    }
  }

  private bucket(resource: string): Map<string, WatchedObject> {
    let bucket = this.objects.get(resource);
    if (!bucket) this.objects.set(resource, (bucket = new Map()));
    return bucket;
  }

  installed(resource: string): boolean {
    return RESOURCE_BY_KEY.get(resource)?.builtIn !== undefined || this.served.has(resource);
  }

  /** the version watched, for a served resource */
  version(resource: string): string | undefined {
    return this.served.get(resource) ?? RESOURCE_BY_KEY.get(resource)?.builtIn?.version;
  }

  list(resource: string): readonly WatchedObject[] {
    return [...(this.objects.get(resource)?.values() ?? [])];
  }

  get(resource: string, name: string, namespace?: string): WatchedObject | undefined {
    return this.objects.get(resource)?.get(`${namespace ?? ''}/${name}`);
  }

  count(): number {
    let n = 0;
    for (const bucket of this.objects.values()) n += bucket.size;
    return n;
  }
}
