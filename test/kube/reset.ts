/**
 * Puts a test API back as it was when it started: what the pool of shared API servers
 * (test/kube/pool.ts) does between two test files.
 *
 * The baseline is every object the server holds right after its first start (the namespaces it
 * makes, bootstrap RBAC, priority and flow-control objects, the `kubernetes` Service). A reset asks
 * discovery for every resource the server serves (custom resources included), and
 *   - deletes every object that is not in the baseline, its finalizers taken off first: nothing else
 *     runs here that would remove them (no kube-controller-manager, no operator);
 *   - finalizes and deletes the namespaces a file made (the namespace controller is part of
 *     kube-controller-manager, which the test API does not run);
 *   - deletes every CustomResourceDefinition but those the caller keeps, and waits until each is gone;
 *   - writes back each baseline object that a file changed;
 * then lists everything again and throws when what is left differs from the baseline, naming it.
 */
import {
  ApisApi,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
  type V1APIResource,
} from '@kubernetes/client-node';

/** apiVersion, kind, namespace and name: one object's key */
type Key = string;

export interface Baseline {
  objects: Map<Key, KubernetesObject>;
}

interface Resource {
  apiVersion: string;
  kind: string;
  name: string;
  namespaced: boolean;
}

/** An object as listed, with the resource it was listed from. */
interface Found {
  resource: Resource;
  object: KubernetesObject;
}

const keyOf = ({ resource, object }: Found): Key =>
  `${resource.apiVersion} ${resource.kind} ${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;

/**
 * Objects the API server itself rewrites while it runs (its endpoint reconciler, the aggregator's
 * registration of each served group): neither a file's doing nor something to restore.
 */
function managedByServer(r: Resource, o: KubernetesObject): boolean {
  const ns = o.metadata?.namespace;
  const name = o.metadata?.name;
  if (ns === 'default' && name === 'kubernetes' && ['Endpoints', 'EndpointSlice'].includes(r.kind)) return true;
  if (r.kind === 'APIService' && o.metadata?.labels?.['kube-aggregator.kubernetes.io/automanaged']) return true;
  return r.kind === 'Event';
}

/**
 * Every resource the server serves that can be listed and deleted, each once: at its group's
 * preferred version where that serves it, else at the first version that does (a group's versions
 * need not serve the same resources: operator.openshift.io serves ImageContentSourcePolicy in
 * v1alpha1 only).
 */
async function discover(kc: KubeConfig): Promise<Resource[]> {
  const core = await kc.makeApiClient(CoreV1Api).getAPIResources();
  const groups = await kc.makeApiClient(ApisApi).getAPIVersions();
  const custom = kc.makeApiClient(CustomObjectsApi);
  const versions = groups.groups.flatMap((g) => {
    const preferred = g.preferredVersion ?? g.versions[0]!;
    return [preferred, ...g.versions.filter((v) => v.version !== preferred.version)].map((v) => ({
      group: g.name,
      ...v,
    }));
  });
  const lists = await Promise.all([
    Promise.resolve({ group: '', apiVersion: 'v1', resources: core.resources }),
    ...versions.map(async (v) => {
      // a group served by an aggregated server that a file stopped answers 503: its APIService
      // (listed in its own, local group) is deleted all the same
      const list = await custom
        .getAPIResources({ group: v.group, version: v.version })
        .catch(() => ({ resources: [] }));
      return { group: v.group, apiVersion: v.groupVersion, resources: list.resources };
    }),
  ]);
  const usable = (r: V1APIResource) => !r.name.includes('/') && r.verbs.includes('list') && r.verbs.includes('delete');
  const seen = new Set<string>();
  return lists.flatMap(({ group, apiVersion, resources }) =>
    resources
      .filter((r) => usable(r) && !seen.has(`${r.name}.${group}`) && seen.add(`${r.name}.${group}`))
      .map((r) => ({ apiVersion, kind: r.kind, name: r.name, namespaced: r.namespaced })),
  );
}

async function listAll(kc: KubeConfig): Promise<Found[]> {
  const client = KubernetesObjectApi.makeApiClient(kc);
  const resources = await discover(kc);
  const lists = await Promise.all(
    resources.map(async (resource) => {
      const list = await client.list(resource.apiVersion, resource.kind);
      return list.items.map((object) => ({
        resource,
        object: { ...object, apiVersion: resource.apiVersion, kind: resource.kind },
      }));
    }),
  );
  return lists.flat();
}

/** The objects a freshly started server holds. */
export async function takeBaseline(kc: KubeConfig): Promise<Baseline> {
  const objects = new Map<Key, KubernetesObject>();
  for (const found of await listAll(kc)) {
    if (!managedByServer(found.resource, found.object)) objects.set(keyOf(found), found.object);
  }
  return { objects };
}

/** What a file may have changed in a baseline object: all but the server's bookkeeping and status. */
function content(o: KubernetesObject): string {
  const { metadata, status: _status, ...rest } = o as KubernetesObject & { status?: unknown };
  return JSON.stringify(sorted({ ...rest, metadata: recreatable({ metadata }).metadata }));
}

/** The same value with every object's keys in order, so that two equal objects print alike. */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v instanceof Date) return v.toISOString();
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, x]) => [k, sorted(x)]),
  );
}

/** A baseline object as a body to create again: without what the server assigns. */
function recreatable(o: KubernetesObject): KubernetesObject {
  const {
    resourceVersion: _rv,
    uid: _uid,
    managedFields: _mf,
    creationTimestamp: _ct,
    generation: _g,
    ...metadata
  } = o.metadata ?? {};
  return { ...o, metadata };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function untilGone(client: KubernetesObjectApi, objects: KubernetesObject[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const gone = async (o: KubernetesObject): Promise<void> => {
    for (let delay = 20; ; delay = Math.min(500, delay * 2)) {
      const present = await client.read(o as KubernetesObject & { metadata: { name: string } }).then(
        () => true,
        (e: { code?: number }) => {
          if (e.code === 404) return false;
          throw e;
        },
      );
      if (!present) break;
      if (Date.now() > deadline)
        throw new Error(`reset: ${o.kind} ${o.metadata?.name} still there after ${timeoutMs} ms`);
      await sleep(delay);
    }
  };
  await Promise.all(objects.map(gone));
}

/**
 * Deletes what is not in the baseline and restores what a file changed in it. Resolves with the
 * number of objects deleted and restored; throws when the server then differs from the baseline.
 */
export async function resetToBaseline(
  kc: KubeConfig,
  baseline: Baseline,
  opts: {
    /** objects left as they are, beyond the baseline (CRDs the next file wants again: test/kube/pool.ts) */
    keep?: (o: KubernetesObject) => boolean;
    timeoutMs?: number;
  } = {},
): Promise<{ deleted: number; restored: number }> {
  const keep = opts.keep ?? (() => false);
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const client = KubernetesObjectApi.makeApiClient(kc);
  const found = await listAll(kc);
  const foreign = (f: Found) =>
    !managedByServer(f.resource, f.object) && !keep(f.object) && !baseline.objects.has(keyOf(f));
  const extra = found.filter((f) => f.resource.kind === 'Event' || foreign(f));
  const of = (kinds: (k: string) => boolean) => extra.filter(({ resource }) => kinds(resource.kind));
  const plain = of((k) => k !== 'Namespace' && k !== 'CustomResourceDefinition');

  // finalizers first: nothing here would ever remove them, and a CRD waits for its objects
  await Promise.all(
    extra
      .filter(({ object }) => (object.metadata?.finalizers?.length ?? 0) > 0)
      .map(({ object }) =>
        client
          .patch(
            { apiVersion: object.apiVersion, kind: object.kind, metadata: { ...object.metadata, finalizers: [] } },
            undefined,
            undefined,
            undefined,
            undefined,
            PatchStrategy.MergePatch,
          )
          .catch(ignoreGone),
      ),
  );
  const remove = (o: KubernetesObject) =>
    client.delete(o, undefined, undefined, 0, undefined, 'Background').catch(ignoreGone);
  await Promise.all(plain.map(({ object }) => remove(object)));

  const core = kc.makeApiClient(CoreV1Api);
  const namespaces = of((k) => k === 'Namespace').map(({ object }) => object);
  await Promise.all(
    namespaces.map(async (ns) => {
      const name = ns.metadata!.name!;
      const current = await core.readNamespace({ name }).catch(() => undefined);
      if (!current) return;
      // the first delete only marks it Terminating; with its finalizers gone, the second removes it
      await core.replaceNamespaceFinalize({ name, body: { ...current, spec: { finalizers: [] } } }).catch(ignoreGone);
      await remove(ns);
      await remove(ns);
    }),
  );
  const crds = of((k) => k === 'CustomResourceDefinition').map(({ object }) => object);
  await Promise.all(crds.map(remove));
  // objects without finalizers go at once; namespaces and CRDs take a moment
  await untilGone(client, [...namespaces, ...crds], timeoutMs);

  let restored = 0;
  const present = new Set(found.map(keyOf));
  for (const [key, base] of baseline.objects) {
    if (present.has(key)) continue;
    await client.create(recreatable(base));
    restored++;
  }
  for (const f of found) {
    const { resource, object } = f;
    const base = baseline.objects.get(keyOf(f));
    if (!base || managedByServer(resource, object) || content(base) === content(object)) continue;
    const body = { ...base, metadata: { ...base.metadata, resourceVersion: object.metadata?.resourceVersion } };
    await client.replace(body);
    restored++;
  }

  const after = await listAll(kc);
  const left = after
    .filter(({ resource, object }) => !managedByServer(resource, object) && !keep(object))
    .filter((f) => {
      const base = baseline.objects.get(keyOf(f));
      return !base || content(base) !== content(f.object);
    })
    .map(keyOf);
  const afterKeys = new Set(after.map(keyOf));
  const missing = [...baseline.objects.keys()].filter((k) => !afterKeys.has(k));
  const wrong = [...left, ...missing.map((m) => `missing ${m}`)];
  if (wrong.length > 0)
    throw new Error(
      `reset left the API unlike its start (${wrong.length}): ${wrong.slice(0, 5).join('; ')}${wrong.length > 5 ? '; ...' : ''}`,
    );
  return { deleted: extra.length, restored };
}

function ignoreGone(e: { code?: number }): void {
  if (e.code !== 404 && e.code !== 409) throw e;
}
