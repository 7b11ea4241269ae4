/**
 * The list-and-watch adapter over @kubernetes/client-node (its CustomObjectsApi for paged lists,
 * its Watch for the streams) that the watcher's informers use through the ListWatch port. One per
 * view: every informer shares its client and connections settings.
 */
import type https from 'node:https';
import { CustomObjectsApi, type KubeConfig, Watch } from '@kubernetes/client-node';
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

export function createListWatch(config: KubeConfig, requestTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MS): ListWatch {
  // lists and watches share one agent: one TLS context, and a list reuses an idle connection
  const agent = sharedAgent(config);
  const custom = new CustomObjectsApi(keepAliveConfiguration(config, requestTimeoutMs, agent));
  const watcher = new Watch(withAgent(config, agent));
  return {
    server: config.getCurrentCluster()?.server ?? '(no server)',
    requestTimeoutMs,
    async listPage(r: ResourcePath, page): Promise<ListPage> {
      const list = (await custom.listClusterCustomObject({
        group: r.group,
        version: r.version,
        plural: r.plural,
        limit: page.limit,
        ...(page.continue && { _continue: page.continue }),
        ...(r.fieldSelector && { fieldSelector: r.fieldSelector }),
      })) as { items?: unknown[]; metadata?: { continue?: string; resourceVersion?: string } };
      return {
        items: list.items ?? [],
        ...(list.metadata?.continue && { continue: list.metadata.continue }),
        ...(list.metadata?.resourceVersion && { resourceVersion: list.metadata.resourceVersion }),
      };
    },
    watch(r, query, onEvent, onDone) {
      return watcher.watch(
        `/apis/${r.group}/${r.version}/${r.plural}`,
        { ...query, allowWatchBookmarks: true, ...(r.fieldSelector && { fieldSelector: r.fieldSelector }) },
        onEvent,
        onDone,
      );
    },
  };
}
