/**
 * The ingress operator (openshift/cluster-ingress-operator @acca9642): it makes the IngressController
 * `default` when there is none, and its status.domain is ingress.config's spec.domain, set once and
 * never changed (pkg/operator/controller/ingress/controller.go:496-509); and its canary route
 * (pkg/operator/controller/canary/route.go): the route openshift-ingress-canary/canary is desired with
 * `spec.subdomain: canary-openshift-ingress-canary` and no host (route.go:161, since 4.14), so the
 * router serves it under the IngressController's domain, never under appsDomain. A canary route that
 * has a host set is deleted and created again as desired (route.go:83).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import {
  clients,
  INGRESS_CONTROLLERS,
  isNotFound,
  listRoutes,
  readIngressConfig,
  ROUTES,
  startLoop,
  type Model,
} from './loop.js';

const NAMESPACE = 'openshift-ingress-canary';
export const CANARY_SUBDOMAIN = 'canary-openshift-ingress-canary';

export function startIngressOperator(kc: KubeConfig, intervalMs = 200): Model {
  const { custom } = clients(kc);
  const desired = {
    apiVersion: 'route.openshift.io/v1',
    kind: 'Route',
    metadata: { name: 'canary', namespace: NAMESPACE, labels: { 'ingress.openshift.io/canary': 'canary_controller' } },
    spec: {
      subdomain: CANARY_SUBDOMAIN,
      to: { kind: 'Service', name: 'ingress-canary', weight: 100 },
      port: { targetPort: '8080-tcp' },
      tls: { termination: 'edge', insecureEdgeTerminationPolicy: 'Redirect' },
      wildcardPolicy: 'None',
    },
  };
  const ic = { ...INGRESS_CONTROLLERS, namespace: 'openshift-ingress-operator', name: 'default' };
  return startLoop('ingress-operator', intervalMs, async () => {
    try {
      await custom.getNamespacedCustomObject(ic);
    } catch (e) {
      if (!isNotFound(e)) throw e;
      const { domain } = (await readIngressConfig(custom)).spec;
      await custom.createNamespacedCustomObject({
        ...INGRESS_CONTROLLERS,
        namespace: ic.namespace,
        body: {
          apiVersion: 'operator.openshift.io/v1',
          kind: 'IngressController',
          metadata: { name: 'default', namespace: ic.namespace },
          spec: { replicas: 1 },
        },
      });
      await custom.patchNamespacedCustomObjectStatus({
        ...ic,
        body: [{ op: 'add', path: '/status', value: { domain } }],
      });
    }
    const current = (await listRoutes(custom, NAMESPACE)).find((r) => r.metadata.name === 'canary');
    if (current && !current.spec.host && current.spec.subdomain === CANARY_SUBDOMAIN) return;
    if (current) await custom.deleteNamespacedCustomObject({ ...ROUTES, namespace: NAMESPACE, name: 'canary' });
    await custom.createNamespacedCustomObject({ ...ROUTES, namespace: NAMESPACE, body: structuredClone(desired) });
  });
}
