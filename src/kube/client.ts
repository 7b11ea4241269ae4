/**
 * The Kube port over @kubernetes/client-node: generic objects through KubernetesObjectApi (the
 * typed APIs drop fields they do not model, and OpenShift's kinds are custom resources anyway),
 * discovery through the group-version resource lists, CSR approval through CertificatesV1Api.
 * Every call retries transient failures (withRetry); updates re-read and re-apply on 409.
 */
import { existsSync } from 'node:fs';
import https from 'node:https';
import { createSecureContext } from 'node:tls';
import {
  ApiException,
  CertificatesV1Api,
  CoreV1Api,
  createConfiguration,
  CustomObjectsApi,
  IsomorphicFetchHttpLibrary,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  ServerConfiguration,
  setHeaderOptions,
  wrapHttpLibrary,
  type Configuration,
  type HttpLibrary,
  type KubernetesObject,
  type RequestContext,
  type ResponseContext,
  type SecurityAuthentication,
} from '@kubernetes/client-node';
import { errorMessage, StepError } from '../base/errors.js';
import { API_READY_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { timed, type Logger } from '../log/logger.js';
import { pollUntil, systemClock, type Clock } from '../ports/clock.js';
import {
  type ApplyOptions,
  describeRef,
  type Kube,
  type KubeObject,
  type ListOptions,
  type ObjectRef,
} from '../ports/kube.js';
import { createListWatch } from './list-watch.js';
import { DEFAULT_RETRY, describeFailure, isTransient, statusOf, withRetry, type RetryPolicy } from './retry.js';

/** the field manager of every server-side apply */
export const FIELD_MANAGER = 'sno-relocate';
/** re-reads after 409 Conflict before giving up: enough for a busy operator, bounded for a stuck one */
const MAX_CONFLICTS = 10;

interface Resource {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}

/** bound on one API request, from sending it to the last byte of the answer */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** bound on one readiness probe (a list of one namespace, which a live API answers at once) */
export const DEFAULT_PROBE_TIMEOUT_MS = 5_000;

export interface KubeClientOptions {
  clock?: Clock;
  retry?: RetryPolicy;
  /** bound on each request; one that runs out is a transient failure and retried */
  requestTimeoutMs?: number;
}

/**
 * A request the API did not answer (in full) in time: an API server that accepts connections but
 * is stuck (stopped, overloaded, behind a dead link). Its code makes it transient for withRetry.
 */
export class RequestTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(method: string, url: string, timeoutMs: number, cause?: unknown) {
    // the path names the operation; the query (selectors, continue tokens) adds nothing
    let path = url;
    try {
      path = new URL(url).pathname;
    } catch {
      // not a URL: keep it as given
    }
    super(
      `no answer from the API within ${timeoutMs / 1000} s (${method} ${path})`,
      cause === undefined ? undefined : { cause },
    );
    this.name = 'RequestTimeoutError';
  }
}

/**
 * client-node's fetch library with a deadline on each request: an AbortSignal.timeout in the
 * request context (joined with any signal already there), which node-fetch honours while
 * connecting, waiting for the answer and reading its body. An abort by that deadline comes out as a
 * RequestTimeoutError rather than node-fetch's "The user aborted a request."
 */
export function timeoutHttpLibrary(
  timeoutMs: number,
  base: HttpLibrary = new IsomorphicFetchHttpLibrary(),
): HttpLibrary {
  return wrapHttpLibrary({
    async send(request: RequestContext): Promise<ResponseContext> {
      const deadline = AbortSignal.timeout(timeoutMs);
      const given = request.getSignal();
      request.setSignal(given ? AbortSignal.any([given, deadline]) : deadline);
      const timedOut = (err: unknown): unknown =>
        deadline.aborted && !given?.aborted
          ? new RequestTimeoutError(request.getHttpMethod(), request.getUrl(), timeoutMs, err)
          : err;
      let response: ResponseContext;
      try {
        response = await base.send(request).toPromise();
      } catch (err) {
        throw timedOut(err);
      }
      // the body is read later, by the API's response processor, still under the same deadline
      const body = response.body;
      response.body = {
        text: () => body.text().catch((err: unknown) => Promise.reject(timedOut(err))),
        binary: () => body.binary().catch((err: unknown) => Promise.reject(timedOut(err))),
      };
      return response;
    },
  });
}

/**
 * What KubeConfig.makeApiClient configures (the kubeconfig's server and authentication), with a
 * deadline on each request; `auth` may wrap the kubeconfig's own (the shared keep-alive agent).
 */
export function timeoutConfiguration(
  config: KubeConfig,
  timeoutMs: number,
  auth: SecurityAuthentication = config,
): Configuration {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new StepError('the kubeconfig names no current cluster');
  return createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: auth },
    httpApi: timeoutHttpLibrary(timeoutMs),
  });
}

const headerOf = (ref: ObjectRef): KubernetesObject & { metadata: { name: string; namespace?: string } } => ({
  apiVersion: ref.apiVersion,
  kind: ref.kind,
  metadata: { name: ref.name, ...(ref.namespace !== undefined && { namespace: ref.namespace }) },
});

const splitApiVersion = (apiVersion: string): { group: string; version: string } => {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
};

/**
 * One keep-alive agent for every request made with `config`, made on first use, or undefined when
 * the library's own agents must stay (plain http, proxies). client-node 1.x makes a new
 * https.Agent for each request, so each call paid a TCP and TLS handshake on both ends; a thousand
 * route patches spent most of their time there. Every connection of the agent shares one TLS
 * context (the kubeconfig's CA and client certificate, parsed once) rather than one each.
 */
export function sharedAgent(config: KubeConfig): (() => Promise<https.Agent>) | undefined {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new StepError('the kubeconfig names no current cluster');
  if (!cluster.server.startsWith('https:') || cluster.proxyUrl) return undefined;
  let agent: Promise<https.Agent> | undefined;
  const make = async () => {
    const tls: https.RequestOptions = {};
    await config.applyToHTTPSOptions(tls);
    return new https.Agent({
      keepAlive: true,
      secureContext: createSecureContext({
        ca: tls.ca,
        cert: tls.cert,
        key: tls.key,
        pfx: tls.pfx,
        passphrase: tls.passphrase,
      }),
      ...(tls.rejectUnauthorized !== undefined && { rejectUnauthorized: tls.rejectUnauthorized }),
      ...(tls.servername && { servername: tls.servername }),
    });
  };
  return () => (agent ??= make());
}

/**
 * The API clients' configuration with the shared keep-alive agent for every request.
 * Authentication is still the kubeconfig's own, per request (tokens, client certificates, exec
 * plugins).
 */
export function keepAliveConfiguration(
  config: KubeConfig,
  timeoutMs: number,
  agent = sharedAgent(config),
): Configuration {
  if (!agent) return timeoutConfiguration(config, timeoutMs);
  const auth = {
    getName: () => 'kubeconfig',
    async applySecurityAuthentication(context: RequestContext) {
      await config.applySecurityAuthentication(context);
      context.setAgent(await agent());
    },
  };
  return timeoutConfiguration(config, timeoutMs, auth);
}

export function createKube(config: KubeConfig, log: Logger, options: KubeClientOptions = {}): Kube {
  const clock = options.clock ?? systemClock;
  const policy = options.retry ?? DEFAULT_RETRY;
  const configuration = keepAliveConfiguration(config, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
  const objects = new KubernetesObjectApi(configuration);
  const customApi = new CustomObjectsApi(configuration);
  const core = new CoreV1Api(configuration);
  const certificates = new CertificatesV1Api(configuration);
  const retry = <T>(what: string, fn: () => Promise<T>) => withRetry(clock, log, what, fn, policy);
  const served = new Map<string, Promise<Map<string, Resource>>>();

  const resources = (apiVersion: string): Promise<Map<string, Resource>> => {
    let found = served.get(apiVersion);
    if (!found) {
      const { group, version } = splitApiVersion(apiVersion);
      found = retry(`discover ${apiVersion}`, async () => {
        try {
          const list =
            group === '' ? await core.getAPIResources() : await customApi.getAPIResources({ group, version });
          // subresources (routes/status) share their kind: keep the resource itself
          return new Map(
            list.resources
              .filter((r) => !r.name.includes('/'))
              .map((r) => [r.kind, { group, version, plural: r.name, namespaced: r.namespaced }]),
          );
        } catch (err) {
          if (statusOf(err) === 404) return new Map<string, Resource>();
          throw err;
        }
      }).catch((err: unknown) => {
        // a stuck API is named in the failure; an answer (ApiException) goes to the caller as it was
        if (err instanceof RequestTimeoutError)
          throw new StepError(`failed to discover ${apiVersion}: ${err.message}`, { cause: err, retryable: true });
        throw err;
      });
      // a failed discovery is asked again next time, not remembered
      found.catch(() => served.delete(apiVersion));
      served.set(apiVersion, found);
    }
    return found;
  };
  const resourceOf = async (apiVersion: string, kind: string, fresh = false) => {
    const found = (await resources(apiVersion)).get(kind);
    if (found || !fresh) return found;
    served.delete(apiVersion);
    return (await resources(apiVersion)).get(kind);
  };
  const serves = async (apiVersion: string, kind: string, opts: { fresh?: boolean } = {}) =>
    (await resourceOf(apiVersion, kind, opts.fresh)) !== undefined;
  const mergePatchOptions = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const applyPatchOptions = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

  /**
   * Custom resources go through CustomObjectsApi, which hands back the JSON as sent: the generic
   * KubernetesObjectApi deserializes unknown kinds into a bare object and drops their spec. Core
   * kinds (Secret) have models and go through KubernetesObjectApi.
   */
  const custom = <T>(r: Resource, ref: { namespace?: string; name?: string }) => ({
    read: () =>
      (r.namespaced
        ? customApi.getNamespacedCustomObject({ ...r, namespace: ref.namespace!, name: ref.name! })
        : customApi.getClusterCustomObject({ ...r, name: ref.name! })) as Promise<T>,
    create: (body: object) =>
      (r.namespaced
        ? customApi.createNamespacedCustomObject({ ...r, namespace: ref.namespace!, body })
        : customApi.createClusterCustomObject({ ...r, body })) as Promise<T>,
    replace: (body: object) =>
      (r.namespaced
        ? customApi.replaceNamespacedCustomObject({ ...r, namespace: ref.namespace!, name: ref.name!, body })
        : customApi.replaceClusterCustomObject({ ...r, name: ref.name!, body })) as Promise<T>,
    apply: (body: object, opts: ApplyOptions) => {
      const query = { ...r, name: ref.name!, body, fieldManager: FIELD_MANAGER, force: opts.force };
      const dryRun = opts.dryRun ? { dryRun: 'All' } : {};
      return (
        r.namespaced
          ? customApi.patchNamespacedCustomObject({ ...query, ...dryRun, namespace: ref.namespace! }, applyPatchOptions)
          : customApi.patchClusterCustomObject({ ...query, ...dryRun }, applyPatchOptions)
      ) as Promise<T>;
    },
    replaceStatus: (body: object) =>
      (r.namespaced
        ? customApi.replaceNamespacedCustomObjectStatus({ ...r, namespace: ref.namespace!, name: ref.name!, body })
        : customApi.replaceClusterCustomObjectStatus({ ...r, name: ref.name!, body })) as Promise<T>,
    patch: (body: object) =>
      (r.namespaced
        ? customApi.patchNamespacedCustomObject(
            { ...r, namespace: ref.namespace!, name: ref.name!, body },
            mergePatchOptions,
          )
        : customApi.patchClusterCustomObject({ ...r, name: ref.name!, body }, mergePatchOptions)) as Promise<T>,
    delete: () =>
      (r.namespaced
        ? customApi.deleteNamespacedCustomObject({ ...r, namespace: ref.namespace!, name: ref.name! })
        : customApi.deleteClusterCustomObject({ ...r, name: ref.name! })) as Promise<unknown>,
  });

  const fail = (verb: string, what: string, err: unknown): never => {
    throw new StepError(`failed to ${verb} ${what}: ${describeFailure(err)}`, {
      cause: err,
      retryable: isTransient(err) || statusOf(err) === 409,
    });
  };

  const get = async <T extends KubeObject>(ref: ObjectRef): Promise<T | undefined> => {
    const r = await resourceOf(ref.apiVersion, ref.kind);
    if (!r) return undefined;
    try {
      if (r.group !== '') return await retry(`read ${describeRef(ref)}`, () => custom<T>(r, ref).read());
      return (await retry(`read ${describeRef(ref)}`, () => objects.read(headerOf(ref)))) as unknown as T;
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      return fail('read', describeRef(ref), err);
    }
  };

  const replace = async <T extends KubeObject>(obj: T): Promise<T> => {
    const ref = { ...obj.metadata, apiVersion: obj.apiVersion, kind: obj.kind };
    const r = await resourceOf(obj.apiVersion, obj.kind);
    if (r && r.group !== '') return retry(`replace ${describeRef(ref)}`, () => custom<T>(r, ref).replace(obj));
    return (await retry(`replace ${describeRef(ref)}`, () =>
      objects.replace(obj as unknown as KubernetesObject),
    )) as unknown as T;
  };

  /** Read, change, write with the read resourceVersion; on 409 Conflict read and change again (bounded). */
  const updateWith = async <T extends KubeObject>(
    ref: ObjectRef,
    change: (current: T) => T | undefined,
    write: (obj: T) => Promise<T>,
  ): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      const current = await get<T>(ref);
      if (!current) throw new StepError(`failed to update ${describeRef(ref)}: it does not exist`);
      const next = change(structuredClone(current));
      if (next === undefined) return current;
      try {
        return await write({
          ...next,
          metadata: { ...next.metadata, resourceVersion: current.metadata.resourceVersion },
        });
      } catch (err) {
        if (statusOf(err) !== 409 || attempt >= MAX_CONFLICTS) return fail('update', describeRef(ref), err);
        log.info(
          { target: describeRef(ref), attempt },
          `${describeRef(ref)} changed while it was being updated: reading it again`,
        );
      }
    }
  };

  return {
    listWatch: () => createListWatch(config, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS),
    get,
    async list<T extends KubeObject>(apiVersion: string, kind: string, opts: ListOptions = {}): Promise<T[]> {
      const r = await resourceOf(apiVersion, kind);
      if (!r) return [];
      // from the watch cache: the same two parameters for either API
      const cache =
        opts.notOlderThan === undefined
          ? undefined
          : { resourceVersion: opts.notOlderThan, resourceVersionMatch: 'NotOlderThan' };
      const query = { labelSelector: opts.labelSelector, ...cache };
      try {
        if (r.group !== '') {
          const page = (await retry(`list ${kind}`, () =>
            r.namespaced && opts.namespace
              ? customApi.listNamespacedCustomObject({ ...r, ...query, namespace: opts.namespace })
              : r.namespaced
                ? customApi.listCustomObjectForAllNamespaces({ ...r, ...query })
                : customApi.listClusterCustomObject({ ...r, ...query }),
          )) as { items: T[] };
          return page.items.map((item) => ({ ...item, apiVersion, kind }));
        }
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
        const list = await retry(`list ${kind}`, () =>
          objects.list(
            apiVersion,
            kind,
            opts.namespace,
            undefined,
            undefined,
            undefined,
            undefined,
            opts.labelSelector,
            undefined,
            undefined,
            cached,
          ),
        );
        // list items come without apiVersion and kind; callers use them as refs
        return list.items.map((item) => ({ ...item, apiVersion, kind }) as unknown as T);
      } catch (err) {
        return fail('list', kind, err);
      }
    },
    async create<T extends KubeObject>(obj: T): Promise<T> {
      const r = await resourceOf(obj.apiVersion, obj.kind);
      try {
        if (r && r.group !== '')
          return await retry(
            `create ${describeRef({ ...obj.metadata, apiVersion: obj.apiVersion, kind: obj.kind })}`,
            () => custom<T>(r, obj.metadata).create(obj),
          );
        return (await retry(
          `create ${describeRef({ ...obj.metadata, apiVersion: obj.apiVersion, kind: obj.kind })}`,
          () => objects.create(obj as unknown as KubernetesObject),
        )) as unknown as T;
      } catch (err) {
        return fail('create', describeRef({ ...obj.metadata, apiVersion: obj.apiVersion, kind: obj.kind }), err);
      }
    },
    async mergePatch<T extends KubeObject>(ref: ObjectRef, patch: object): Promise<T> {
      const r = await resourceOf(ref.apiVersion, ref.kind);
      try {
        if (r && r.group !== '') return await retry(`patch ${describeRef(ref)}`, () => custom<T>(r, ref).patch(patch));
        return (await retry(`patch ${describeRef(ref)}`, () =>
          objects.patch(
            {
              ...headerOf(ref),
              ...patch,
              metadata: { ...(patch as { metadata?: object }).metadata, ...headerOf(ref).metadata },
            },
            undefined,
            undefined,
            'sno-relocate',
            undefined,
            PatchStrategy.MergePatch,
          ),
        )) as unknown as T;
      } catch (err) {
        return fail('patch', describeRef(ref), err);
      }
    },
    update: <T extends KubeObject>(ref: ObjectRef, change: (current: T) => T | undefined) =>
      updateWith(ref, change, replace),
    updateStatus: <T extends KubeObject>(ref: ObjectRef, change: (current: T) => T | undefined) =>
      updateWith(ref, change, async (obj: T) => {
        const r = await resourceOf(ref.apiVersion, ref.kind);
        if (!r || r.group === '')
          throw new StepError(`${describeRef(ref)}: only a custom resource's status is written`);
        return retry(`replace ${describeRef(ref)} status`, () => custom<T>(r, ref).replaceStatus(obj));
      }),
    async delete(ref: ObjectRef): Promise<boolean> {
      const r = await resourceOf(ref.apiVersion, ref.kind);
      try {
        if (r && r.group !== '') await retry(`delete ${describeRef(ref)}`, () => custom(r, ref).delete());
        else await retry(`delete ${describeRef(ref)}`, () => objects.delete(headerOf(ref)));
        return true;
      } catch (err) {
        if (statusOf(err) === 404) return false;
        return fail('delete', describeRef(ref), err);
      }
    },
    async apply<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T> {
      const r = await resourceOf(obj.apiVersion, obj.kind, true);
      const namespace = r?.namespaced ? (obj.metadata.namespace ?? 'default') : undefined;
      const body = { ...obj, metadata: { ...obj.metadata, ...(namespace !== undefined && { namespace }) } };
      const ref = { ...body.metadata, apiVersion: obj.apiVersion, kind: obj.kind };
      const verb = opts.dryRun ? 'dry-run apply' : 'apply';
      const what = `${verb} ${describeRef(ref)}`;
      if (!r) throw new StepError(`the cluster does not serve ${obj.apiVersion} ${obj.kind}`);
      try {
        if (r.group !== '') return await retry(what, () => custom<T>(r, ref).apply(body, opts));
        return (await retry(what, () =>
          objects.patch(
            body as unknown as KubernetesObject,
            undefined,
            opts.dryRun ? 'All' : undefined,
            FIELD_MANAGER,
            opts.force,
            PatchStrategy.ServerSideApply,
          ),
        )) as unknown as T;
      } catch (err) {
        return fail(verb, describeRef(ref), err);
      }
    },
    serves,
    async approveCsr(name: string, reason: string, message: string): Promise<void> {
      for (let attempt = 1; ; attempt++) {
        try {
          const csr = await retry(`read CertificateSigningRequest ${name}`, () =>
            certificates.readCertificateSigningRequest({ name }),
          );
          const conditions = csr.status?.conditions ?? [];
          if (conditions.some((c) => c.type === 'Approved' && c.status === 'True')) return;
          csr.status = {
            ...csr.status,
            conditions: [
              ...conditions,
              { type: 'Approved', status: 'True', reason, message, lastUpdateTime: clock.now() },
            ],
          };
          await retry(`approve CertificateSigningRequest ${name}`, () =>
            certificates.replaceCertificateSigningRequestApproval({ name, body: csr }),
          );
          return;
        } catch (err) {
          if (statusOf(err) !== 409 || attempt >= MAX_CONFLICTS)
            return fail('approve', `CertificateSigningRequest ${name}`, err);
        }
      }
    },
  };
}

export interface ConnectOptions extends KubeClientOptions {
  /** how long to wait for the API to answer; kubelet was just started, so this is minutes */
  readyTimeoutMs?: number;
  /** bound on each readiness probe: a stuck API counts as not answering yet, and the wait goes on */
  probeTimeoutMs?: number;
}

/**
 * Loads the kubeconfig and waits (bounded, logged) until the API answers a cheap list.
 */
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

export async function connectKube(kubeconfigPath: string, log: Logger, options: ConnectOptions = {}): Promise<Kube> {
  const config = loadKubeConfig(kubeconfigPath);
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
          // an answer that no retry changes (401, 403) ends the wait at once
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
  return createKube(config, log, options);
}
