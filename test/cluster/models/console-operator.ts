/**
 * The console operator's route sync (openshift/console-operator @68415718,
 * pkg/console/controllers/route/controller.go and pkg/console/subresource/route/route.go):
 *
 * - the default routes `console` and `downloads` in openshift-console are applied every resync with
 *   the host `<name>-openshift-console.<ingress.config spec.domain>` (route.go:194-196); ApplyRoute
 *   replaces the spec (route.go:198-221), so a host patched by anyone else is put back. appsDomain
 *   is never consulted;
 * - a componentRoute {openshift-console, console|downloads} whose hostname differs from the default
 *   makes a second route `<name>-custom` on that hostname (bindata/assets/routes/*-custom-route.yaml),
 *   served with the componentRoute's secret, which must be a kubernetes.io/tls secret in
 *   openshift-config with a certificate valid now (controller.go:307-337); without a usable secret
 *   the operator reports Degraded and makes no custom route. Without the componentRoute, the custom
 *   route is deleted.
 * - with the cluster's network given, the route health check of route-health.ts: the ClusterOperator
 *   is Available only while the active console route answers from inside the cluster.
 */
import { X509Certificate } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  clients,
  isNotFound,
  listRoutes,
  readIngressConfig,
  ROUTES,
  setOperatorCondition,
  startLoop,
  type Model,
  type RouteObject,
} from './loop.js';
import { consoleRouteHealth, type ClusterNetwork } from './route-health.js';

const NAMESPACE = 'openshift-console';
const ROUTES_OWNED = [
  { name: 'console', port: 'https', termination: 'reencrypt' },
  { name: 'downloads', port: 'http', termination: 'edge' },
] as const;

export function startConsoleOperator(kc: KubeConfig, intervalMs = 200, network?: ClusterNetwork): Model {
  const { custom, core } = clients(kc);
  return startLoop('console-operator', intervalMs, async () => {
    const ingress = await readIngressConfig(custom);
    const routes = await listRoutes(custom, NAMESPACE);
    const problems: string[] = [];
    for (const r of ROUTES_OWNED) {
      const defaultHost = `${r.name}-openshift-console.${ingress.spec.domain}`;
      const spec = {
        host: defaultHost,
        to: { kind: 'Service', name: r.name, weight: 100 },
        port: { targetPort: r.port },
        tls: { termination: r.termination, insecureEdgeTerminationPolicy: 'Redirect' },
        wildcardPolicy: 'None',
      };
      await apply(r.name, spec);
      const component = ingress.spec.componentRoutes?.find((c) => c.namespace === NAMESPACE && c.name === r.name);
      const customName = `${r.name}-custom`;
      if (!component || component.hostname === defaultHost) {
        if (routes.some((x) => x.metadata.name === customName))
          await custom.deleteNamespacedCustomObject({ ...ROUTES, namespace: NAMESPACE, name: customName });
        continue;
      }
      let tls: Record<string, string> = { termination: r.termination, insecureEdgeTerminationPolicy: 'Redirect' };
      if (component.servingCertKeyPairSecret) {
        const pair = await servingPair(component.servingCertKeyPairSecret.name);
        if (typeof pair === 'string') {
          problems.push(`${r.name}: ${pair}`);
          continue;
        }
        tls = { ...tls, certificate: pair.crt, key: pair.key };
      }
      await apply(customName, { ...spec, host: component.hostname, tls });
    }
    await setOperatorCondition(custom, 'console', {
      type: 'Degraded',
      status: problems.length > 0 ? 'True' : 'False',
      reason: problems.length > 0 ? 'CustomRouteSync_FailedSecretValidation' : 'AsExpected',
      message: problems.join('; '),
    });
    if (network) {
      const failed = await consoleRouteHealth(custom, core, network);
      await setOperatorCondition(custom, 'console', {
        type: 'Available',
        status: failed ? 'False' : 'True',
        reason: failed ? `RouteHealth_${failed.reason}` : 'AsExpected',
        message: failed ? `RouteHealthAvailable: ${failed.message}` : '',
      });
    }

    async function apply(name: string, spec: RouteObject['spec']): Promise<void> {
      const current = routes.find((x) => x.metadata.name === name);
      if (!current) {
        await custom.createNamespacedCustomObject({
          ...ROUTES,
          namespace: NAMESPACE,
          body: { apiVersion: 'route.openshift.io/v1', kind: 'Route', metadata: { name, namespace: NAMESPACE }, spec },
        });
        return;
      }
      if (isDeepStrictEqual(current.spec, spec)) return;
      await custom.replaceNamespacedCustomObject({
        ...ROUTES,
        namespace: NAMESPACE,
        name,
        body: { ...current, spec },
      });
    }
  });

  /** The secret's pair, or why it cannot serve (controller.go:336-337, route.go certificateVerifier). */
  async function servingPair(name: string): Promise<{ crt: string; key: string } | string> {
    try {
      const s = await core.readNamespacedSecret({ namespace: 'openshift-config', name });
      if (s.type !== 'kubernetes.io/tls') return `secret ${name} is not of type kubernetes.io/tls`;
      const crt = Buffer.from(s.data?.['tls.crt'] ?? '', 'base64').toString();
      const key = Buffer.from(s.data?.['tls.key'] ?? '', 'base64').toString();
      const cert = new X509Certificate(crt);
      const t = Date.now();
      if (t < Date.parse(cert.validFrom) || t > Date.parse(cert.validTo))
        return `secret ${name}: certificate not valid now`;
      return { crt, key };
    } catch (e) {
      if (isNotFound(e)) return `secret ${name} not found`;
      throw e;
    }
  }
}
