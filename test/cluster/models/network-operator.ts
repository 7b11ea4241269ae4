/**
 * The network operator's proxy controller (openshift/cluster-network-operator
 * pkg/controller/proxyconfig, release-4.14 to 4.18): it publishes proxy.config/cluster's spec in its
 * status, which is what every other component reads (the kube-apiserver and openshift-apiserver
 * operators' proxy observer, library-go pkg/operator/configobserver/proxy/observe_proxy.go:69-84; the
 * machine-config operator's controller config, pkg/operator/sync.go:570-574). With no httpProxy and no
 * httpsProxy the status is empty; otherwise noProxy gets the cluster's own names and networks on top
 * of the site's (the same list lifecycle-agent computes as the network operator does: 127.0.0.1,
 * localhost, .svc, .cluster.local, api-int.<cluster domain>, the networks).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { clients, isNotFound, PROXIES, proxyStatus, startLoop, type Model, type ProxyFields } from './loop.js';

export interface NetworkOperatorOptions {
  /** `<cluster name>.<base domain>` of the factory install: api-int's domain */
  clusterDomain: string;
  /** machine, service and cluster networks */
  networks: string[];
  intervalMs?: number;
}

export function startNetworkOperator(kc: KubeConfig, opts: NetworkOperatorOptions): Model {
  const { custom } = clients(kc);
  return startLoop('network-operator', opts.intervalMs ?? 200, async () => {
    let spec: ProxyFields;
    try {
      spec =
        ((await custom.getClusterCustomObject({ ...PROXIES, name: 'cluster' })) as { spec?: ProxyFields }).spec ?? {};
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    const wanted: ProxyFields =
      spec.httpProxy || spec.httpsProxy
        ? {
            ...(spec.httpProxy && { httpProxy: spec.httpProxy }),
            ...(spec.httpsProxy && { httpsProxy: spec.httpsProxy }),
            noProxy: [
              ...new Set([
                '.cluster.local',
                '.svc',
                '127.0.0.1',
                `api-int.${opts.clusterDomain}`,
                'localhost',
                ...opts.networks,
                ...(spec.noProxy ? spec.noProxy.split(',') : []),
              ]),
            ]
              .sort()
              .join(','),
          }
        : {};
    if (isDeepStrictEqual(await proxyStatus(custom), wanted)) return;
    await custom.patchClusterCustomObjectStatus({
      ...PROXIES,
      name: 'cluster',
      body: [{ op: 'add', path: '/status', value: wanted }],
    });
  });
}
