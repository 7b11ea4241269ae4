/**
 * Which resource serves a kind: the group version's resource list, asked once and remembered. A
 * failed discovery is asked again next time, not remembered.
 */
import { type Configuration, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { StepError } from '../base/errors.js';
import { statusOf } from './retry.js';
import { RequestTimeoutError } from './transport.js';

export interface Resource {
  apiVersion: string;
  kind: string;
  /** '' for the core group */
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}

export interface Discovery {
  /** the resource that serves `kind`, or undefined; `fresh` asks again when the remembered answer is no */
  resourceOf(apiVersion: string, kind: string, fresh?: boolean): Promise<Resource | undefined>;
}

type Retry = <T>(what: string, fn: () => Promise<T>) => Promise<T>;

export const splitApiVersion = (apiVersion: string): { group: string; version: string } => {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
};

export function createDiscovery(configuration: Configuration, retry: Retry): Discovery {
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
          .map((r) => [r.kind, { apiVersion, kind: r.kind, group, version, plural: r.name, namespaced: r.namespaced }]),
      );
    } catch (err) {
      if (statusOf(err) === 404) return new Map<string, Resource>();
      throw err;
    }
  };

  const resources = (apiVersion: string): Promise<Map<string, Resource>> => {
    let found = served.get(apiVersion);
    if (!found) {
      found = retry(`discover ${apiVersion}`, () => ask(apiVersion)).catch((err: unknown) => {
        // a stuck API is named in the failure; an answer (ApiException) goes to the caller as it was
        if (err instanceof RequestTimeoutError)
          throw new StepError(`failed to discover ${apiVersion}: ${err.message}`, { cause: err, retryable: true });
        throw err;
      });
      found.catch(() => served.delete(apiVersion));
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
  };
}
