/**
 * The list-and-watch adapter over @kubernetes/client-node (its CustomObjectsApi for paged lists,
 * its Watch for the streams) that the watcher's informers use through the ListWatch port. One per
 * view: every informer shares its client and connections settings.
 */
import type https from 'node:https';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, Watch } from '@kubernetes/client-node';
import type { ListPage, ListWatch, ResourcePath } from '../ports/kube.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, keepAliveConfiguration, sharedAgent } from './transport.js';

/**
 * The kubeconfig as client-node's Watch reads it, with the shared keep-alive agent in place of the
 * new agent (and TLS context) the library makes for each watch.
 */
function withAgent(config: KubeConfig, agent: (() => Promise<https.Agent>) | undefined): KubeConfig {
  if (!agent) return config;
  const shared = Object.create(config) as KubeConfig;
  shared.applyToFetchOptions = async (opts) => ({ ...(await config.applyToFetchOptions(opts)), agent: await agent() });
  return shared;
}

interface CoreQuery {
  limit: number;
  _continue?: string;
  fieldSelector?: string;
}

export function createListWatch(config: KubeConfig, requestTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MS): ListWatch {
  // lists and watches share one agent: one TLS context, and a list reuses an idle connection
  const agent = sharedAgent(config);
  const configuration = keepAliveConfiguration(config, requestTimeoutMs, agent);
  const custom = new CustomObjectsApi(configuration);
  const core = new CoreV1Api(configuration);
  // the core group's collections the watcher reads (group ''): /api/v1/<plural>, as plain JSON
  // the way a watch event carries them (the typed client makes Dates of the timestamps)
  const plain = async (list: Promise<unknown>): Promise<unknown> => JSON.parse(JSON.stringify(await list)) as unknown;
  const coreLists: Record<string, (q: CoreQuery) => Promise<unknown>> = {
    endpoints: (q) => plain(core.listEndpointsForAllNamespaces(q)),
    configmaps: (q) => plain(core.listConfigMapForAllNamespaces(q)),
  };
  const watcher = new Watch(withAgent(config, agent));
  return {
    server: config.getCurrentCluster()?.server ?? '(no server)',
    requestTimeoutMs,
    async listPage(r: ResourcePath, page): Promise<ListPage> {
      const query = {
        limit: page.limit,
        ...(page.continue && { _continue: page.continue }),
        ...(r.fieldSelector && { fieldSelector: r.fieldSelector }),
      };
      const coreList = r.group === '' ? coreLists[r.plural] : undefined;
      if (r.group === '' && !coreList) throw new Error(`no list for the core collection ${r.plural}`);
      const list = (await (coreList
        ? coreList(query)
        : custom.listClusterCustomObject({ group: r.group, version: r.version, plural: r.plural, ...query }))) as {
        items?: unknown[];
        metadata?: { continue?: string; resourceVersion?: string };
      };
      return {
        items: list.items ?? [],
        ...(list.metadata?.continue && { continue: list.metadata.continue }),
        ...(list.metadata?.resourceVersion && { resourceVersion: list.metadata.resourceVersion }),
      };
    },
    watch(r, query, onEvent, onDone) {
      return watcher.watch(
        r.group === '' ? `/api/${r.version}/${r.plural}` : `/apis/${r.group}/${r.version}/${r.plural}`,
        { ...query, allowWatchBookmarks: true, ...(r.fieldSelector && { fieldSelector: r.fieldSelector }) },
        onEvent,
        onDone,
      );
    },
  };
}
