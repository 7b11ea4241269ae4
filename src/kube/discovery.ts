/**
 * Which resource serves a kind: the group version's resource list, asked once and remembered until
 * the next outage ends. A failed discovery is asked again next time, not remembered.
 *
 * A 404 for a group version is "not served" only when the API says so with authority: it is ready
 * (/readyz, which waits for the CRDs and APIServices to be registered after a start) and its group
 * list does not name the group version. Otherwise it is a server that has not registered every path
 * yet, and the caller retries it like a 503.
 */
import {
  ApisApi,
  type Configuration,
  CoreV1Api,
  CustomObjectsApi,
  HttpMethod,
  type ResponseContext,
} from '@kubernetes/client-node';
import { describeFailure, statusOf } from './retry.js';

export interface Resource {
  apiVersion: string;
  kind: string;
  /** '' for the core group */
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
  /** whether the resource can be listed */
  listable: boolean;
}

export interface Discovery {
  /** the resource that serves `kind`, or undefined; `fresh` asks again when the remembered answer is no */
  resourceOf(apiVersion: string, kind: string, fresh?: boolean): Promise<Resource | undefined>;
  /** every resource that can be listed: the core group's and each group's preferred version's, but `except`'s */
  listable(except?: ReadonlySet<string>): Promise<Resource[]>;
  /** forgets every answer: after an outage, a group version may be served again, or no more */
  forget(apiVersion?: string): void;
}

/** A discovery that failed, named by its group version; as transient as its cause. */
export class DiscoveryError extends Error {
  constructor(apiVersion: string, cause: unknown) {
    super(`cannot discover ${apiVersion}: ${describeFailure(cause)}`, { cause });
    this.name = 'DiscoveryError';
  }
}

export const splitApiVersion = (apiVersion: string): { group: string; version: string } => {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
};

/** Whether the API server reports itself ready (GET /readyz), through the clients' own transport. */
export async function apiReady(configuration: Configuration): Promise<boolean> {
  const request = configuration.baseServer.makeRequestContext('/readyz', HttpMethod.GET);
  await configuration.authMethods.default?.applySecurityAuthentication(request);
  const response: ResponseContext = await configuration.httpApi.send(request).toPromise();
  await response.body.text();
  return response.httpStatusCode === 200;
}

/**
 * Whether a 404 for `group/version` means the API does not serve it (true), rather than "not yet"
 * (false): the API is ready and its group list does not name the group version.
 */
export async function surelyUnserved(configuration: Configuration, group: string, version: string): Promise<boolean> {
  if (!(await apiReady(configuration))) return false;
  const groups = await new ApisApi(configuration).getAPIVersions();
  return !groups.groups.some((g) => g.name === group && g.versions.some((v) => v.version === version));
}

export function createDiscovery(configuration: Configuration): Discovery {
  const core = new CoreV1Api(configuration);
  const custom = new CustomObjectsApi(configuration);
  const served = new Map<string, Promise<Map<string, Resource>>>();

  const ask = async (apiVersion: string): Promise<Map<string, Resource>> => {
    const { group, version } = splitApiVersion(apiVersion);
    try {
      const list = group === '' ? await core.getAPIResources() : await custom.getAPIResources({ group, version });
      // subresources (routes/status) share their kind: keep the resource itself
      return new Map(
        list.resources
          .filter((r) => !r.name.includes('/'))
          .map((r) => [
            r.kind,
            {
              apiVersion,
              kind: r.kind,
              group,
              version,
              plural: r.name,
              namespaced: r.namespaced,
              listable: r.verbs.includes('list'),
            },
          ]),
      );
    } catch (err) {
      // a failure of the check itself leaves the 404 as it was: not served yet
      if (statusOf(err) === 404 && (await surelyUnserved(configuration, group, version).catch(() => false)))
        return new Map();
      throw new DiscoveryError(apiVersion, err);
    }
  };

  const resources = (apiVersion: string): Promise<Map<string, Resource>> => {
    let found = served.get(apiVersion);
    if (!found) {
      found = ask(apiVersion);
      const asked = found;
      asked.catch(() => served.get(apiVersion) === asked && served.delete(apiVersion));
      served.set(apiVersion, found);
    }
    return found;
  };

  return {
    async resourceOf(apiVersion, kind, fresh = false) {
      const found = (await resources(apiVersion)).get(kind);
      if (found || !fresh) return found;
      served.delete(apiVersion);
      return (await resources(apiVersion)).get(kind);
    },
    async listable(except = new Set<string>()) {
      const groups = await new ApisApi(configuration).getAPIVersions();
      const versions = [
        'v1',
        ...groups.groups.flatMap((g) => (g.preferredVersion ? [g.preferredVersion.groupVersion] : [])),
      ].filter((v) => !except.has(v));
      const out: Resource[] = [];
      for (const apiVersion of versions) out.push(...(await resources(apiVersion)).values());
      return out.filter((r) => r.listable);
    },
    forget(apiVersion) {
      if (apiVersion === undefined) served.clear();
      else served.delete(apiVersion);
    },
  };
}
