/**
 * The Kube port over @kubernetes/client-node: each verb finds the resource that serves the kind
 * (discovery.ts), calls the endpoint chosen for that resource (endpoint.ts) through the shared
 * transport (transport.ts), and retries transient failures (retry.ts); updates re-read and re-apply
 * on 409. connectKube reads the kubeconfig and waits for the API first (connect.ts).
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
import { DEFAULT_RETRY, describeFailure, isTransient, statusOf, withRetry, type RetryPolicy } from './retry.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, keepAliveConfiguration } from './transport.js';

/** re-reads after 409 Conflict before giving up: enough for a busy operator, bounded for a stuck one */
const MAX_CONFLICTS = 10;

export interface KubeClientOptions {
  clock?: Clock;
  retry?: RetryPolicy;
  /** bound on each request; one that runs out is a transient failure and retried */
  requestTimeoutMs?: number;
}

const refOfObject = (obj: KubeObject): ObjectRef => ({ ...obj.metadata, apiVersion: obj.apiVersion, kind: obj.kind });

export function createKube(config: KubeConfig, log: Logger, options: KubeClientOptions = {}): Kube {
  const clock = options.clock ?? systemClock;
  const policy = options.retry ?? DEFAULT_RETRY;
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const configuration = keepAliveConfiguration(config, requestTimeoutMs);
  const certificates = new CertificatesV1Api(configuration);
  const retry = <T>(what: string, fn: () => Promise<T>) => withRetry(clock, log, what, fn, policy);
  const discovery = createDiscovery(configuration, retry);
  const endpointOf = createEndpoints(configuration);

  const fail = (verb: string, what: string, err: unknown): never => {
    throw new StepError(`failed to ${verb} ${what}: ${describeFailure(err)}`, {
      cause: err,
      retryable: isTransient(err) || statusOf(err) === 409,
    });
  };
  /** the endpoint of a kind the cluster must serve for `verb` to make sense */
  const served = async (verb: string, ref: ObjectRef, fresh = false): Promise<Endpoint> => {
    const r = await discovery.resourceOf(ref.apiVersion, ref.kind, fresh);
    if (!r)
      throw new StepError(
        `failed to ${verb} ${describeRef(ref)}: the cluster does not serve ${ref.apiVersion} ${ref.kind}`,
      );
    return endpointOf(r);
  };
  /** one verb on one object: retried while transient, then a StepError naming it */
  const call = async <T>(verb: string, ref: ObjectRef, fn: (e: Endpoint) => Promise<unknown>, fresh = false) => {
    const e = await served(verb, ref, fresh);
    try {
      return (await retry(`${verb} ${describeRef(ref)}`, () => fn(e))) as T;
    } catch (err) {
      return fail(verb, describeRef(ref), err);
    }
  };

  const get = async <T extends KubeObject>(ref: ObjectRef): Promise<T | undefined> => {
    const r = await discovery.resourceOf(ref.apiVersion, ref.kind);
    if (!r) return undefined;
    try {
      return (await retry(`read ${describeRef(ref)}`, () => endpointOf(r).read(ref))) as T;
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      return fail('read', describeRef(ref), err);
    }
  };

  return {
    listWatch: () => createListWatch(config, requestTimeoutMs),
    get,
    async list<T extends KubeObject>(apiVersion: string, kind: string, opts = {}): Promise<T[]> {
      const r = await discovery.resourceOf(apiVersion, kind);
      if (!r) return [];
      try {
        return (await retry(`list ${kind}`, () => endpointOf(r).list(opts))) as T[];
      } catch (err) {
        return fail('list', kind, err);
      }
    },
    create: <T extends KubeObject>(obj: T) => call<T>('create', refOfObject(obj), (e) => e.create(obj)),
    mergePatch: <T extends KubeObject>(ref: ObjectRef, patch: object) =>
      call<T>('patch', ref, (e) => e.mergePatch(ref, patch)),
    async update<T extends KubeObject>(ref: ObjectRef, change: (current: T) => T | undefined): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        const current = await get<T>(ref);
        if (!current) throw new StepError(`failed to update ${describeRef(ref)}: it does not exist`);
        const next = change(structuredClone(current));
        if (next === undefined) return current;
        const body = { ...next, metadata: { ...next.metadata, resourceVersion: current.metadata.resourceVersion } };
        const e = await served('update', ref);
        try {
          return (await retry(`replace ${describeRef(ref)}`, () => e.replace(body))) as T;
        } catch (err) {
          if (statusOf(err) !== 409 || attempt >= MAX_CONFLICTS) return fail('update', describeRef(ref), err);
          log.info(
            { target: describeRef(ref), attempt },
            `${describeRef(ref)} changed while it was being updated: reading it again`,
          );
        }
      }
    },
    async delete(ref: ObjectRef): Promise<boolean> {
      const r = await discovery.resourceOf(ref.apiVersion, ref.kind);
      if (!r) return false;
      try {
        await retry(`delete ${describeRef(ref)}`, () => endpointOf(r).delete(ref));
        return true;
      } catch (err) {
        if (statusOf(err) === 404) return false;
        return fail('delete', describeRef(ref), err);
      }
    },
    async apply<T extends KubeObject>(obj: T, opts: { force: boolean; dryRun?: boolean }): Promise<T> {
      const verb = opts.dryRun ? 'dry-run apply' : 'apply';
      const r = await discovery.resourceOf(obj.apiVersion, obj.kind, true);
      if (!r) throw new StepError(`the cluster does not serve ${obj.apiVersion} ${obj.kind}`);
      const namespace = r.namespaced ? (obj.metadata.namespace ?? 'default') : undefined;
      const body = { ...obj, metadata: { ...obj.metadata, ...(namespace !== undefined && { namespace }) } };
      return call<T>(verb, refOfObject(body), (e) => e.apply(body, opts));
    },
    serves: async (apiVersion, kind, opts = {}) =>
      (await discovery.resourceOf(apiVersion, kind, opts.fresh)) !== undefined,
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
