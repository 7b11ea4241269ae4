/**
 * The cluster's API as the steps see it: generic objects (OpenShift kinds are custom resources),
 * optimistic-concurrency updates, discovery and CSR approval. The adapter over
 * @kubernetes/client-node is src/kube/client.ts; every call there retries transient failures.
 */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  resourceVersion?: string;
  uid?: string;
  creationTimestamp?: string;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  /**
   * Served from the API server's watch cache, at least as new as this resourceVersion ('0': what
   * the cache holds now), instead of a quorum read of etcd: for a thousand routes a sixth of the
   * time. The cache follows etcd by milliseconds; a version the cache has not seen yet (the list's
   * own, which counts every kind's writes) is waited for up to 3 s and then refused, so give one
   * taken from an object of the same kind.
   */
  notOlderThan?: string;
}

/** `Kind namespace/name`, as logs, plans and errors name an object. */
export const describeRef = (ref: ObjectRef): string =>
  `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;

export const refOf = (obj: KubeObject): ObjectRef => ({
  apiVersion: obj.apiVersion,
  kind: obj.kind,
  name: obj.metadata.name,
  ...(obj.metadata.namespace !== undefined && { namespace: obj.metadata.namespace }),
});

/** A custom resource's collection, cluster-wide: /apis/<group>/<version>/<plural>. */
export interface ResourcePath {
  group: string;
  version: string;
  plural: string;
  fieldSelector?: string;
}

export interface ListPage {
  items: unknown[];
  continue?: string;
  resourceVersion?: string;
}

/**
 * What the watcher's informers need of the API: paged lists and watches of one collection. A
 * list page fails after `requestTimeoutMs`; a watch runs until the server ends it or it is aborted.
 */
export interface ListWatch {
  /** the API server's address, for the watcher's banner */
  readonly server: string;
  readonly requestTimeoutMs: number;
  listPage(resource: ResourcePath, page: { limit: number; continue?: string }): Promise<ListPage>;
  /** Starts a watch: `onEvent` for each event, `onDone` once when it ends; the controller aborts it. */
  watch(
    resource: ResourcePath,
    query: { resourceVersion: string; timeoutSeconds: number },
    onEvent: (type: string, object: unknown) => void,
    onDone: (err: unknown) => void,
  ): Promise<AbortController>;
}

export interface ApplyOptions {
  /** take over fields another field manager owns, rather than fail with 409 */
  force: boolean;
  /** the API validates and answers, and stores nothing (dryRun=All) */
  dryRun?: boolean;
}

export interface Kube {
  /** lists and watches for the watcher's informers (the health step's view of the cluster) */
  listWatch(): ListWatch;
  /** undefined when the object (or its kind) does not exist */
  get<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T | undefined>;
  list<T extends KubeObject = KubeObject>(apiVersion: string, kind: string, options?: ListOptions): Promise<T[]>;
  create<T extends KubeObject>(obj: T): Promise<T>;
  /** JSON merge patch (RFC 7386) */
  mergePatch<T extends KubeObject = KubeObject>(ref: ObjectRef, patch: object): Promise<T>;
  /**
   * Read, change, replace with the read resourceVersion; on 409 Conflict read again and change
   * again (bounded). `change` returns undefined when there is nothing to do; the result is then
   * the object as read.
   */
  update<T extends KubeObject = KubeObject>(ref: ObjectRef, change: (current: T) => T | undefined): Promise<T>;
  /** As update, through the status subresource of a custom resource (an operator's own status). */
  updateStatus<T extends KubeObject = KubeObject>(ref: ObjectRef, change: (current: T) => T | undefined): Promise<T>;
  /** false when it was already gone */
  delete(ref: ObjectRef): Promise<boolean>;
  /**
   * Server-side apply under the field manager `sno-relocate`: the object as the API stored it (or,
   * with dryRun, would store it). A namespaced object without a namespace goes to `default`.
   */
  apply<T extends KubeObject = KubeObject>(obj: T, options: ApplyOptions): Promise<T>;
  /**
   * whether the cluster serves this kind (discovery, cached per group version; `fresh` asks again
   * when the cached answer is no, for a kind whose CRD was just established)
   */
  serves(apiVersion: string, kind: string, options?: { fresh?: boolean }): Promise<boolean>;
  /**
   * every kind the API serves that can be listed: the core group's and each group's preferred
   * version's, but the group versions `except` names (not even asked: an aggregated one may be down)
   */
  kinds(except?: ReadonlySet<string>): Promise<{ apiVersion: string; kind: string }[]>;
  /** adds an Approved condition through the /approval subresource */
  approveCsr(name: string, reason: string, message: string): Promise<void>;
}
