/**
 * How every request reaches the API: client-node's fetch library with a deadline on each request,
 * and one keep-alive agent (one TLS context) per kubeconfig instead of the library's agent per
 * request. Authentication stays the kubeconfig's own, per request (tokens, client certificates,
 * exec plugins).
 */
import https from 'node:https';
import { createSecureContext } from 'node:tls';
import {
  createConfiguration,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  ServerConfiguration,
  wrapHttpLibrary,
  type Configuration,
  type HttpLibrary,
  type RequestContext,
  type ResponseContext,
  type SecurityAuthentication,
} from '@kubernetes/client-node';
import { StepError } from '../base/errors.js';

/** bound on one API request, from sending it to the last byte of the answer */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** bound on one readiness probe (a list of one namespace, which a live API answers at once) */
export const DEFAULT_PROBE_TIMEOUT_MS = 5_000;

/** The kubeconfig's current cluster's address; a kubeconfig without one cannot be used. */
export function serverOf(config: KubeConfig): string {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new StepError('the kubeconfig names no current cluster');
  return cluster.server;
}

/**
 * A request the API did not answer (in full) in time: an API server that accepts connections but
 * is stuck (stopped, overloaded, behind a dead link). Its code makes it transient (retry.ts).
 */
export class RequestTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(
    readonly method: string,
    readonly url: string,
    timeoutMs: number,
    cause?: unknown,
  ) {
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
  return createConfiguration({
    baseServer: new ServerConfiguration(serverOf(config), {}),
    authMethods: { default: auth },
    httpApi: timeoutHttpLibrary(timeoutMs),
  });
}

/**
 * One keep-alive agent for every request made with `config`, made on first use, or undefined when
 * the library's own agents must stay (plain http, proxies). client-node 1.x makes a new
 * https.Agent for each request, so each call paid a TCP and TLS handshake on both ends; a thousand
 * route patches spent most of their time there. Every connection of the agent shares one TLS
 * context (the kubeconfig's CA and client certificate, parsed once) rather than one each.
 */
export function sharedAgent(config: KubeConfig): (() => Promise<https.Agent>) | undefined {
  if (!serverOf(config).startsWith('https:') || config.getCurrentCluster()?.proxyUrl) return undefined;
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
 * Authentication is still the kubeconfig's own, per request.
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
