/**
 * Asks a registry whether it serves a manifest, as CRI-O would when it pulls: the distribution API's
 * `HEAD /v2/<repository>/manifests/<reference>` over HTTPS verified with the system's and the
 * site's CAs, authenticated with the site's pull secret (Basic, or a Bearer token from the realm
 * the registry names: the distribution token flow). Node's https with a keep-alive agent per
 * client; answers come back as outcomes, and no credential ever reaches one.
 */
import http from 'node:http';
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import type { DockerConfig } from '../config/v1/schema.js';

export type Outcome =
  | { kind: 'present' }
  /** the registry answered that it has no such manifest (or repository) */
  | { kind: 'missing'; detail: string }
  /** the credentials were refused, or there are none for a registry that wants them */
  | { kind: 'unauthorized'; detail: string }
  /** the registry's certificate does not verify against the system's and the site's CAs */
  | { kind: 'untrusted'; detail: string }
  /** no answer: refused, unknown name, timed out */
  | { kind: 'unreachable'; detail: string }
  | { kind: 'error'; detail: string };

const MANIFEST_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** the longest a token or error body may be read to */
const MAX_BODY = 64 * 1024;

export interface RegistryClientOptions {
  auths: DockerConfig['auths'];
  /** PEM certificates trusted besides the system's (the site's trust bundle) */
  caPem?: string;
  requestTimeoutMs: number;
  /** connections per registry host */
  maxSockets: number;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

class RequestFailure extends Error {
  constructor(readonly outcome: Outcome) {
    super(outcome.kind);
  }
}

/** An error of the TLS or socket layer as an outcome, named by its code only. */
function failureOf(err: unknown, host: string): Outcome {
  const code = (err as { code?: string }).code ?? (err instanceof Error ? err.name : 'error');
  if (UNTRUSTED.has(code))
    return { kind: 'untrusted', detail: `${host}: certificate not trusted (${code}): add its CA to spec.trustBundle` };
  if (code === 'TimeoutError' || code === 'ETIMEDOUT')
    return { kind: 'unreachable', detail: `${host}: no answer in time` };
  return { kind: 'unreachable', detail: `${host}: ${code}` };
}

/** user:password of the pull secret's entry for `location` (host[/path]): the longest key that covers it. */
function credentialsFor(auths: DockerConfig['auths'], location: string): string | undefined {
  const keys = Object.keys(auths).map(
    (k) =>
      [
        k,
        k
          .replace(/^https?:\/\//, '')
          .replace(/\/v[12]\/?$/, '')
          .replace(/\/$/, ''),
      ] as const,
  );
  let best: { auth: string; length: number } | undefined;
  for (const [key, normal] of keys) {
    if (location !== normal && !location.startsWith(`${normal}/`)) continue;
    const entry = auths[key] as { auth?: string; username?: unknown; password?: unknown };
    const auth =
      entry.auth ??
      (typeof entry.username === 'string' && typeof entry.password === 'string'
        ? Buffer.from(`${entry.username}:${entry.password}`).toString('base64')
        : undefined);
    if (auth && (!best || normal.length > best.length)) best = { auth, length: normal.length };
  }
  return best?.auth;
}

/** `Bearer realm="...",service="..."` as a map; undefined for another scheme. */
function bearerChallenge(header: string | undefined): Record<string, string> | undefined {
  if (!header || !/^bearer\s/i.test(header)) return undefined;
  const params: Record<string, string> = {};
  for (const m of header.slice(6).matchAll(/([a-zA-Z_]+)="([^"]*)"/g)) params[m[1]!.toLowerCase()] = m[2]!;
  return params;
}

export class RegistryClient {
  private readonly agents: { https: https.Agent; http: http.Agent };
  /** Authorization values that worked, per host (Basic) or per host and repository (Bearer) */
  private readonly authorization = new Map<string, string>();

  constructor(private readonly options: RegistryClientOptions) {
    const ca = options.caPem ? [...rootCertificates, options.caPem] : undefined;
    this.agents = {
      https: new https.Agent({ keepAlive: true, maxSockets: options.maxSockets, ...(ca && { ca }) }),
      http: new http.Agent({ keepAlive: true, maxSockets: options.maxSockets }),
    };
  }

  close(): void {
    this.agents.https.destroy();
    this.agents.http.destroy();
  }

  private request(url: URL, method: string, headers: Record<string, string>): Promise<Answer> {
    const plain = url.protocol === 'http:';
    return new Promise((resolve, reject) => {
      const req = (plain ? http : https).request(
        url,
        {
          method,
          headers,
          agent: plain ? this.agents.http : this.agents.https,
          timeout: this.options.requestTimeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size <= MAX_BODY) chunks.push(c);
          });
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          res.on('error', (err) => reject(new RequestFailure(failureOf(err, url.host))));
        },
      );
      req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
      req.on('error', (err) => reject(new RequestFailure(failureOf(err, url.host))));
      req.end();
    });
  }

  /** A Bearer token for `scope` from the realm of a challenge, fetched with the pull secret's credentials. */
  private async token(challenge: Record<string, string>, basic: string | undefined, host: string): Promise<string> {
    if (!challenge.realm)
      throw new RequestFailure({ kind: 'error', detail: `${host}: a Bearer challenge without a realm` });
    const url = new URL(challenge.realm);
    if (challenge.service) url.searchParams.set('service', challenge.service);
    if (challenge.scope) url.searchParams.set('scope', challenge.scope);
    const answer = await this.request(url, 'GET', basic ? { authorization: `Basic ${basic}` } : {});
    if (answer.status === 401 || answer.status === 403)
      throw new RequestFailure({
        kind: 'unauthorized',
        detail: `${host}: the token service refused the pull secret's credentials (${answer.status})`,
      });
    let parsed: { token?: unknown; access_token?: unknown } = {};
    try {
      parsed = JSON.parse(answer.body) as typeof parsed;
    } catch {
      // said below: no token
    }
    const token = typeof parsed.token === 'string' ? parsed.token : parsed.access_token;
    if (answer.status !== 200 || typeof token !== 'string')
      throw new RequestFailure({
        kind: 'error',
        detail: `${host}: the token service answered ${answer.status} without a token`,
      });
    return token;
  }

  /**
   * One request with the registry's authentication: the Authorization that worked before, else
   * none, then what a 401's challenge asks for. `cacheKey` is where a Bearer token is kept.
   */
  private async authorized(
    url: URL,
    method: string,
    accept: string,
    location: string,
    cacheKey: string,
  ): Promise<Answer> {
    const host = url.host;
    const basic = credentialsFor(this.options.auths, location);
    const known = this.authorization.get(cacheKey) ?? this.authorization.get(host);
    const headers = { accept, ...(known && { authorization: known }) };
    const first = await this.request(url, method, headers);
    if (first.status !== 401) return first;
    const challenge = first.headers['www-authenticate'];
    const bearer = bearerChallenge(Array.isArray(challenge) ? challenge[0] : challenge);
    let authorization: string;
    if (bearer) authorization = `Bearer ${await this.token(bearer, basic, host)}`;
    else if (basic) authorization = `Basic ${basic}`;
    else return first;
    if (authorization === known) return first;
    const second = await this.request(url, method, { accept, authorization });
    if (second.status !== 401) this.authorization.set(bearer ? cacheKey : host, authorization);
    return second;
  }

  private async outcome(ask: () => Promise<Answer>, host: string, what: string): Promise<Outcome> {
    try {
      const answer = await ask();
      if (answer.status >= 200 && answer.status < 300) return { kind: 'present' };
      if (answer.status === 401 || answer.status === 403)
        return {
          kind: 'unauthorized',
          detail: `${host}: ${answer.status} for ${what}: ${credentialsHint(this.options.auths, host)}`,
        };
      if (answer.status === 404) return { kind: 'missing', detail: `${host}: no ${what}` };
      return { kind: 'error', detail: `${host}: ${answer.status} for ${what}` };
    } catch (err) {
      if (err instanceof RequestFailure) return err.outcome;
      return { kind: 'error', detail: `${host}: ${(err as Error).message}` };
    }
  }

  /** Whether `location` (host[:port]/repository) serves the manifest `reference` (a digest or a tag). */
  manifest(location: string, reference: string): Promise<Outcome> {
    const slash = location.indexOf('/');
    const host = location.slice(0, slash);
    const repository = location.slice(slash + 1);
    const url = new URL(`https://${host}/v2/${repository}/manifests/${reference}`);
    return this.outcome(
      () => this.authorized(url, 'HEAD', MANIFEST_TYPES, location, `${host}/${repository}`),
      host,
      `manifest ${repository}${reference.includes(':') ? '@' : ':'}${reference}`,
    );
  }

  /** The registry's API root (`GET /v2/`) with the pull secret's credentials: answers, trusted, lets the site in. */
  ping(host: string): Promise<Outcome> {
    return this.outcome(
      () => this.authorized(new URL(`https://${host}/v2/`), 'GET', 'application/json', host, host),
      host,
      'the registry API (/v2/)',
    );
  }
}

const credentialsHint = (auths: DockerConfig['auths'], host: string): string =>
  credentialsFor(auths, host) === undefined
    ? 'the site pull secret has no entry for it'
    : "the site pull secret's credentials for it were refused";
