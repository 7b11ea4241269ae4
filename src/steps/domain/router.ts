/**
 * The domain step's routing: ingress.config's appsDomain and the operators' componentRoutes, the
 * IngressController whose default certificate the router serves, and the operators' routes that
 * must be admitted on their new hosts.
 */
import {
  admittedFor,
  COMPONENT_ROUTES,
  OPERATOR_ROUTES,
  ROUTE_API,
  type ComponentRoute,
  type IngressConfig,
  type RouteObject,
  type SiteDomains,
} from '../../kube/openshift.js';
import type { Kube, KubeObject } from '../../ports/kube.js';

export interface IngressControllerObject extends KubeObject {
  spec?: { defaultCertificate?: { name?: string }; [field: string]: unknown };
}

/** The operators' routes that move with the componentRoutes, and the host each must be admitted at. */
const movedByOperators = (domains: SiteDomains) =>
  OPERATOR_ROUTES.flatMap((r) => (r.host ? [{ ...r, wanted: `${r.host}.${domains.apps}` }] : []));

export function wantedComponentRoutes(domains: SiteDomains): ComponentRoute[] {
  return COMPONENT_ROUTES.map((r) => ({
    namespace: r.namespace,
    name: r.name,
    hostname: `${r.host}.${domains.apps}`,
    servingCertKeyPairSecret: { name: r.secret },
  }));
}

/** The ingress spec with the site's appsDomain and component routes; other component routes kept in place. */
export function mergeIngress(
  spec: NonNullable<IngressConfig['spec']>,
  domains: SiteDomains,
): NonNullable<IngressConfig['spec']> {
  const ours = wantedComponentRoutes(domains);
  const key = (r: { namespace: string; name: string }) => `${r.namespace}/${r.name}`;
  const wanted = new Map(ours.map((r) => [key(r), r]));
  const merged = (spec.componentRoutes ?? []).map((r) => wanted.get(key(r)) ?? r);
  for (const r of ours) if (!merged.some((m) => key(m) === key(r))) merged.push(r);
  return { ...spec, appsDomain: domains.apps, componentRoutes: merged };
}

export const pendingRoutes = (domains: SiteDomains, routes: readonly RouteObject[]) =>
  movedByOperators(domains).filter((r) => !admittedFor(routes, r.wanted));

/**
 * The operators' namespaces only (their routes and the custom ones they add, console-custom), not
 * every route of the cluster: a thousand routes are a megabyte the API server reads and encodes.
 */
export async function operatorRoutes(kube: Kube): Promise<RouteObject[]> {
  const namespaces = [...new Set(OPERATOR_ROUTES.map((r) => r.namespace))];
  return (
    await Promise.all(namespaces.map((namespace) => kube.list<RouteObject>(ROUTE_API, 'Route', { namespace })))
  ).flat();
}
