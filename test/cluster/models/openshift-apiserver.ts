/**
 * The openshift-apiserver's host assignment for routes (openshift/openshift-apiserver @56aa2d96,
 * vendored library-go pkg/route/hostassignment/assignment.go AllocateHost and plugin.go): a route
 * with neither host nor subdomain (and a wildcard policy other than Subdomain) gets the host
 * `<name, dots replaced by dashes>-<namespace>.<routingConfig.subdomain>` and the annotation
 * `openshift.io/host.generated=true`. routingConfig.subdomain is ingress.config's appsDomain when set,
 * else its domain (cluster-openshift-apiserver-operator @8206430b,
 * pkg/operator/configobservation/ingresses/observe_ingresses.go:42-45). Upstream assigns on create
 * in the API server; the test API has no such hook, so this model assigns right after the create.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { clients, listRoutes, readIngressConfig, ROUTES, startLoop, type Model } from './loop.js';

export const HOST_GENERATED_ANNOTATION = 'openshift.io/host.generated';

export function startOpenShiftApiServer(kc: KubeConfig, intervalMs = 200): Model {
  const { custom } = clients(kc);
  return startLoop('openshift-apiserver', intervalMs, async () => {
    const ingress = await readIngressConfig(custom);
    const suffix = ingress.spec.appsDomain || ingress.spec.domain;
    for (const route of await listRoutes(custom)) {
      if (route.spec.host || route.spec.subdomain || route.spec.wildcardPolicy === 'Subdomain') continue;
      const host = `${route.metadata.name.replace(/\./g, '-')}-${route.metadata.namespace}.${suffix}`;
      await custom.replaceNamespacedCustomObject({
        ...ROUTES,
        namespace: route.metadata.namespace,
        name: route.metadata.name,
        body: {
          ...route,
          metadata: {
            ...route.metadata,
            annotations: { ...route.metadata.annotations, [HOST_GENERATED_ANNOTATION]: 'true' },
          },
          spec: { ...route.spec, host },
        },
      });
    }
  });
}
