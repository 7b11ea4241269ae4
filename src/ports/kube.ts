/**
 * The cluster's API as the steps see it: generic objects (OpenShift kinds are custom resources),
 * optimistic-concurrency updates, discovery and CSR approval. The adapter over
 * @kubernetes/client-node is src/kube/client.ts; every call there retries transient failures.
 */
import type { KubeConfig } from '@kubernetes/client-node';

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

export interface Kube {
  readonly config: KubeConfig;
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
  /** false when it was already gone */
  delete(ref: ObjectRef): Promise<boolean>;
  /** whether the cluster serves this kind (discovery, cached per group version) */
  serves(apiVersion: string, kind: string): Promise<boolean>;
  /** adds an Approved condition through the /approval subresource */
  approveCsr(name: string, reason: string, message: string): Promise<void>;
}
