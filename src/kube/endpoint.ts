/**
 * The verbs on one resource, chosen once per resource: custom resources go through
 * CustomObjectsApi, which hands back the JSON as sent (the generic KubernetesObjectApi deserializes
 * unknown kinds into a bare object and drops their spec); core kinds (Secret, Namespace) have
 * models and go through KubernetesObjectApi.
 */
import {
  type Configuration,
  CustomObjectsApi,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { ApplyOptions, KubeObject, ListOptions, ObjectRef } from '../ports/kube.js';
import type { Resource } from './discovery.js';

/** the field manager of every server-side apply */
export const FIELD_MANAGER = 'sno-relocate';

export interface Endpoint {
  readonly namespaced: boolean;
  read(ref: ObjectRef): Promise<KubeObject>;
  /** the items carry apiVersion and kind, as refs need them */
  list(options: ListOptions): Promise<KubeObject[]>;
  create(obj: KubeObject): Promise<KubeObject>;
  replace(obj: KubeObject): Promise<KubeObject>;
  /** through the status subresource: an operator's own status; custom resources only */
  replaceStatus(obj: KubeObject): Promise<KubeObject>;
  mergePatch(ref: ObjectRef, patch: object): Promise<KubeObject>;
  apply(obj: KubeObject, options: ApplyOptions): Promise<KubeObject>;
  delete(ref: ObjectRef): Promise<unknown>;
}

const mergePatchOptions = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const applyPatchOptions = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/** The watch cache's two query parameters, the same for either API. */
const cacheQuery = (options: ListOptions) =>
  options.notOlderThan === undefined
    ? undefined
    : { resourceVersion: options.notOlderThan, resourceVersionMatch: 'NotOlderThan' };

function customEndpoint(api: CustomObjectsApi, r: Resource): Endpoint {
  const { group, version, plural } = r;
  const path = { group, version, plural };
  const at = (ref: { namespace?: string; name?: string }) => ({ ...path, namespace: ref.namespace!, name: ref.name! });
  const as = (p: Promise<unknown>) => p as Promise<KubeObject>;
  return {
    namespaced: r.namespaced,
    read: (ref) => as(r.namespaced ? api.getNamespacedCustomObject(at(ref)) : api.getClusterCustomObject(at(ref))),
    async list(options) {
      const query = { ...path, labelSelector: options.labelSelector, ...cacheQuery(options) };
      const page = (await (r.namespaced && options.namespace
        ? api.listNamespacedCustomObject({ ...query, namespace: options.namespace })
        : r.namespaced
          ? api.listCustomObjectForAllNamespaces(query)
          : api.listClusterCustomObject(query))) as { items: KubeObject[] };
      return page.items.map((item) => ({ ...item, apiVersion: r.apiVersion, kind: r.kind }));
    },
    create: (body) =>
      as(
        r.namespaced
          ? api.createNamespacedCustomObject({ ...at(body.metadata), body })
          : api.createClusterCustomObject({ ...path, body }),
      ),
    replace: (body) =>
      as(
        r.namespaced
          ? api.replaceNamespacedCustomObject({ ...at(body.metadata), body })
          : api.replaceClusterCustomObject({ ...at(body.metadata), body }),
      ),
    replaceStatus: (body) =>
      as(
        r.namespaced
          ? api.replaceNamespacedCustomObjectStatus({ ...at(body.metadata), body })
          : api.replaceClusterCustomObjectStatus({ ...at(body.metadata), body }),
      ),
    mergePatch: (ref, body) =>
      as(
        r.namespaced
          ? api.patchNamespacedCustomObject({ ...at(ref), body }, mergePatchOptions)
          : api.patchClusterCustomObject({ ...at(ref), body }, mergePatchOptions),
      ),
    apply: (body, options) => {
      const query = {
        ...at(body.metadata),
        body,
        fieldManager: FIELD_MANAGER,
        force: options.force,
        ...(options.dryRun && { dryRun: 'All' }),
      };
      return as(
        r.namespaced
          ? api.patchNamespacedCustomObject(query, applyPatchOptions)
          : api.patchClusterCustomObject(query, applyPatchOptions),
      );
    },
    delete: (ref) =>
      r.namespaced ? api.deleteNamespacedCustomObject(at(ref)) : api.deleteClusterCustomObject(at(ref)),
  };
}

const headerOf = (ref: ObjectRef): KubernetesObject & { metadata: { name: string; namespace?: string } } => ({
  apiVersion: ref.apiVersion,
  kind: ref.kind,
  metadata: { name: ref.name, ...(ref.namespace !== undefined && { namespace: ref.namespace }) },
});

function coreEndpoint(objects: KubernetesObjectApi, configuration: Configuration, r: Resource): Endpoint {
  const as = (p: Promise<unknown>) => p as Promise<KubeObject>;
  const k8s = (obj: KubeObject) => obj as unknown as KubernetesObject;
  return {
    namespaced: r.namespaced,
    read: (ref) => as(objects.read(headerOf(ref))),
    async list(options) {
      const cache = cacheQuery(options);
      // KubernetesObjectApi.list takes no resourceVersion and, of a configuration passed to it,
      // uses only the server to make the request (client-node 1.x object.js): the query goes there
      const cached: Configuration | undefined = cache && {
        ...configuration,
        baseServer: {
          makeRequestContext: (endpoint, method) => {
            const request = configuration.baseServer.makeRequestContext(endpoint, method);
            for (const [name, value] of Object.entries(cache)) request.setQueryParam(name, value);
            return request;
          },
        },
      };
      const list = await objects.list(
        r.apiVersion,
        r.kind,
        options.namespace,
        undefined,
        undefined,
        undefined,
        undefined,
        options.labelSelector,
        undefined,
        undefined,
        cached,
      );
      return list.items.map((item) => ({ ...item, apiVersion: r.apiVersion, kind: r.kind }) as unknown as KubeObject);
    },
    create: (obj) => as(objects.create(k8s(obj))),
    replace: (obj) => as(objects.replace(k8s(obj))),
    replaceStatus: () =>
      Promise.reject(new Error(`${r.kind} is a core kind: only a custom resource's status is written`)),
    mergePatch: (ref, patch) =>
      as(
        objects.patch(
          {
            ...headerOf(ref),
            ...patch,
            metadata: { ...(patch as { metadata?: object }).metadata, ...headerOf(ref).metadata },
          },
          undefined,
          undefined,
          FIELD_MANAGER,
          undefined,
          PatchStrategy.MergePatch,
        ),
      ),
    apply: (obj, options) =>
      as(
        objects.patch(
          k8s(obj),
          undefined,
          options.dryRun ? 'All' : undefined,
          FIELD_MANAGER,
          options.force,
          PatchStrategy.ServerSideApply,
        ),
      ),
    delete: (ref) => objects.delete(headerOf(ref)),
  };
}

/** The endpoint of each resource, made on first use and kept. */
export function createEndpoints(configuration: Configuration): (r: Resource) => Endpoint {
  const custom = new CustomObjectsApi(configuration);
  const objects = new KubernetesObjectApi(configuration);
  const made = new WeakMap<Resource, Endpoint>();
  return (r) => {
    let e = made.get(r);
    if (!e) {
      e = r.group === '' ? coreEndpoint(objects, configuration, r) : customEndpoint(custom, r);
      made.set(r, e);
    }
    return e;
  };
}
