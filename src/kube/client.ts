/**
 * The Kube port over @kubernetes/client-node: each verb finds the resource that serves the kind
 * (discovery.ts), calls the endpoint chosen for that resource (endpoint.ts) through the shared
 * transport (transport.ts), and rides out API outages (retry.ts); updates re-read and re-apply on
 * 409. connectKube reads the kubeconfig and waits for the API first (connect.ts).
 */
import { CertificatesV1Api, type KubeConfig } from '@kubernetes/client-node';
import { StepError } from '../base/errors.js';
import type { Logger } from '../log/logger.js';
import { systemClock, type Clock } from '../ports/clock.js';
import { describeRef, type Kube, type KubeObject, type ObjectRef } from '../ports/kube.js';
import { loadKubeConfig, waitForApi, type ReadyOptions } from './connect.js';
import { createDiscovery } from './discovery.js';
import { createEndpoints, type Endpoint } from './endpoint.js';
import { createListWatch } from './list-watch.js';
import {
  createRetry,
  DEFAULT_RETRY,
  describeFailure,
  isNotFound,
  isTransient,
  isUnserved,
  OutageBudgetError,
  statusOf,
  type RetryPolicy,
} from './retry.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, keepAliveConfiguration } from './transport.js';

/** re-reads after 409 Conflict before giving up: enough for a busy operator, bounded for a stuck one */
const MAX_CONFLICTS = 10;

export interface KubeClientOptions {
  clock?: Clock;
  /** the outage budget of each call, and its backoff */
  retry?: RetryPolicy;
  /** bound on each request; one that runs out is a transient failure and retried */
  requestTimeoutMs?: number;
}

/** A write to a kind the cluster does not serve: an answer, not an outage. */
class NotServedError extends Error {
  constructor(apiVersion: string, kind: string) {
    super(`the cluster does not serve ${apiVersion} ${kind}`);
  }
}

const refOfObject = (obj: KubeObject): ObjectRef => ({ ...obj.metadata, apiVersion: obj.apiVersion, kind: obj.kind });

export function createKube(config: KubeConfig, log: Logger, options: KubeClientOptions = {}): Kube {
  const clock = options.clock ?? systemClock;
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const configuration = keepAliveConfiguration(config, requestTimeoutMs);
  const certificates = new CertificatesV1Api(configuration);
  const discovery = createDiscovery(configuration);
  // once an outage is over, every group version is asked again: what came back is found
  const retry = createRetry(clock, log, options.retry ?? DEFAULT_RETRY, () => discovery.forget());
  const endpointOf = createEndpoints(configuration);

  const fail = (verb: string, what: string, err: unknown): never => {
    throw new StepError(`failed to ${verb} ${what}: ${describeFailure(err)}`, {
      cause: err,
      retryable: err instanceof OutageBudgetError || isTransient(err) || statusOf(err) === 409,
    });
  };
  /**
   * One verb on one kind, retried through outages. Each attempt finds the resource again: a path not
   * served yet (a bare 404) makes discovery ask again, and `act` gets undefined for a kind the
   * cluster does not serve.
   */
  const attempt = <T>(
    what: string,
    apiVersion: string,
    kind: string,
    act: (e: Endpoint | undefined) => Promise<T>,
    fresh = false,
  ): Promise<T> =>
    retry(what, async () => {
      const r = await discovery.resourceOf(apiVersion, kind, fresh);
      try {
        return await act(r && endpointOf(r));
      } catch (err) {
        if (isUnserved(err)) discovery.forget(apiVersion);
        throw err;
      }
    });
  const served = (ref: ObjectRef, e: Endpoint | undefined): Endpoint => {
    if (!e) throw new NotServedError(ref.apiVersion, ref.kind);
    return e;
  };
  /** a write: the kind must be served, and any failure is the step's, naming the object */
  const write = async <T>(verb: string, ref: ObjectRef, act: (e: Endpoint) => Promise<unknown>, fresh = false) => {
    try {
      return (await attempt(
        `${verb} ${describeRef(ref)}`,
        ref.apiVersion,
        ref.kind,
        (e) => act(served(ref, e)),
        fresh,
      )) as T;
    } catch (err) {
      return fail(verb, describeRef(ref), err);
    }
  };

  const get = async <T extends KubeObject>(ref: ObjectRef): Promise<T | undefined> => {
    try {
      return (await attempt(`read ${describeRef(ref)}`, ref.apiVersion, ref.kind, async (e) => e?.read(ref))) as T;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      return fail('read', describeRef(ref), err);
    }
  };

  /** Read, change, write with the read resourceVersion; on 409 Conflict read and change again (bounded). */
  const updateWith = async <T extends KubeObject>(
    ref: ObjectRef,
    change: (current: T) => T | undefined,
    put: (e: Endpoint, body: T) => Promise<unknown>,
  ): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      const current = await get<T>(ref);
      if (!current) throw new StepError(`failed to update ${describeRef(ref)}: it does not exist`);
      const next = change(structuredClone(current));
      if (next === undefined) return current;
      const body = { ...next, metadata: { ...next.metadata, resourceVersion: current.metadata.resourceVersion } };
      try {
        return await write<T>('update', ref, (e) => put(e, body));
      } catch (err) {
        if (statusOf((err as Error).cause) !== 409 || attempt >= MAX_CONFLICTS) throw err;
        log.info(
          { target: describeRef(ref), attempt },
          `${describeRef(ref)} changed while it was being updated: reading it again`,
        );
      }
    }
  };

  return {
    listWatch: () => createListWatch(config, requestTimeoutMs),
    get,
    async list<T extends KubeObject>(apiVersion: string, kind: string, opts = {}): Promise<T[]> {
      try {
        return (await attempt(`list ${kind}`, apiVersion, kind, async (e) => (e ? e.list(opts) : []))) as T[];
      } catch (err) {
        return fail('list', kind, err);
      }
    },
    create: <T extends KubeObject>(obj: T) => write<T>('create', refOfObject(obj), (e) => e.create(obj)),
    mergePatch: <T extends KubeObject>(ref: ObjectRef, patch: object) =>
      write<T>('patch', ref, (e) => e.mergePatch(ref, patch)),
    update: <T extends KubeObject>(ref: ObjectRef, change: (current: T) => T | undefined) =>
      updateWith(ref, change, (e, body) => e.replace(body)),
    updateStatus: <T extends KubeObject>(ref: ObjectRef, change: (current: T) => T | undefined) =>
      updateWith(ref, change, (e, body) => e.replaceStatus(body)),
    async delete(ref: ObjectRef): Promise<boolean> {
      try {
        return await attempt(`delete ${describeRef(ref)}`, ref.apiVersion, ref.kind, async (e) =>
          e ? (await e.delete(ref), true) : false,
        );
      } catch (err) {
        if (isNotFound(err)) return false;
        return fail('delete', describeRef(ref), err);
      }
    },
    async apply<T extends KubeObject>(obj: T, opts: { force: boolean; dryRun?: boolean }): Promise<T> {
      const verb = opts.dryRun ? 'dry-run apply' : 'apply';
      // a namespaced object without a namespace goes to `default`
      const act = (e: Endpoint) => {
        const namespace = e.namespaced ? (obj.metadata.namespace ?? 'default') : undefined;
        return e.apply({ ...obj, metadata: { ...obj.metadata, ...(namespace !== undefined && { namespace }) } }, opts);
      };
      return write<T>(verb, refOfObject(obj), act, true);
    },
    async serves(apiVersion: string, kind: string, opts: { fresh?: boolean } = {}): Promise<boolean> {
      try {
        return (
          (await retry(`discover ${apiVersion}`, () => discovery.resourceOf(apiVersion, kind, opts.fresh))) !==
          undefined
        );
      } catch (err) {
        return fail('discover', apiVersion, err);
      }
    },
    async kinds(except?: ReadonlySet<string>): Promise<{ apiVersion: string; kind: string }[]> {
      try {
        const found = await retry('discover the API', () => discovery.listable(except));
        return found.map(({ apiVersion, kind }) => ({ apiVersion, kind }));
      } catch (err) {
        return fail('discover', 'the API', err);
      }
    },
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

export type ConnectOptions = KubeClientOptions & ReadyOptions;

/** Loads the kubeconfig, waits (bounded, logged) until the API answers, and makes the client. */
export async function connectKube(kubeconfigPath: string, log: Logger, options: ConnectOptions = {}): Promise<Kube> {
  const config = loadKubeConfig(kubeconfigPath);
  await waitForApi(config, log, options);
  return createKube(config, log, options);
}
