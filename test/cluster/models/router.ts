/**
 * The default router's admission, as openshift/router does it: every route gets a status.ingress
 * entry for router "default" with the host it serves, Admitted=True, unless an older route already
 * claims the same host and path from another namespace (pkg/router/controller/host_admitter.go,
 * HostAlreadyClaimed: the oldest claim wins). A route with spec.subdomain is served at
 * `<subdomain>.<IngressController status.domain>` (pkg/router/controller/status.go; the ingress
 * operator's canary relies on it). The entry follows the host when the host changes. It is the
 * router's pod that writes the status: from the moment the IngressController names another default
 * certificate until the router's new pod runs with it (workload-rollouts.ts), nothing is admitted.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import {
  clients,
  INGRESS_CONTROLLERS,
  listRoutes,
  now,
  ROUTES,
  startLoop,
  type Model,
  type RouteObject,
} from './loop.js';

export const ROUTER_NAME = 'default';

/** The host the default router serves a route at, or undefined when it has none yet. */
export function servedHost(route: RouteObject, routerDomain: string): string | undefined {
  return route.spec.host || (route.spec.subdomain ? `${route.spec.subdomain}.${routerDomain}` : undefined);
}

export function startRouter(
  kc: KubeConfig,
  intervalMs = 200,
  runs: (defaultCertificate: string) => boolean = () => true,
): Model {
  const { custom } = clients(kc);
  return startLoop('router', intervalMs, async () => {
    const ic = (await custom.getNamespacedCustomObject({
      ...INGRESS_CONTROLLERS,
      namespace: 'openshift-ingress-operator',
      name: 'default',
    })) as { spec?: { defaultCertificate?: { name?: string } }; status?: { domain?: string } };
    if (!runs(ic.spec?.defaultCertificate?.name ?? '')) return;
    const domain = ic.status?.domain ?? '';
    const routes = (await listRoutes(custom)).sort(
      (a, b) =>
        (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
        `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
    );
    const paths = new Set<string>();
    const hosts = new Map<string, string>();
    for (const route of routes) {
      const host = servedHost(route, domain);
      if (!host) continue;
      const key = `${host}${route.spec.path ?? ''}`;
      const owner = hosts.get(host) ?? route.metadata.namespace;
      const claimed = paths.has(key) || owner !== route.metadata.namespace;
      if (!claimed) {
        paths.add(key);
        hosts.set(host, owner);
      }
      const current = route.status?.ingress?.find((i) => i.routerName === ROUTER_NAME);
      const admitted = claimed ? 'False' : 'True';
      const currentAdmitted = current?.conditions?.find((c) => c.type === 'Admitted')?.status;
      if (current?.host === host && currentAdmitted === admitted) continue;
      const entry = {
        host,
        routerName: ROUTER_NAME,
        routerCanonicalHostname: `router-default.${domain}`,
        wildcardPolicy: route.spec.wildcardPolicy ?? 'None',
        conditions: [
          {
            type: 'Admitted',
            status: admitted,
            ...(claimed && {
              reason: 'HostAlreadyClaimed',
              message: `an older route in namespace ${owner} already claims ${key}`,
            }),
            lastTransitionTime: now(),
          },
        ],
      };
      const others = (route.status?.ingress ?? []).filter((i) => i.routerName !== ROUTER_NAME);
      await custom.patchNamespacedCustomObjectStatus({
        ...ROUTES,
        namespace: route.metadata.namespace,
        name: route.metadata.name,
        body: [{ op: route.status ? 'replace' : 'add', path: '/status', value: { ingress: [...others, entry] } }],
      });
    }
  });
}
