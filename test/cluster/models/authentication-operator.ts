/**
 * The authentication operator's custom route controller and router-certs check
 * (openshift/cluster-authentication-operator @f3df4f5b):
 *
 * - pkg/controllers/customroute/custom_route_controller.go:150-225: the route
 *   openshift-authentication/oauth-openshift gets the host of the componentRoute
 *   {openshift-authentication, oauth-openshift}, else `oauth-openshift.<ingress.config spec.domain>`;
 *   the spec is overwritten, so a host patched by anyone else is put back. The componentRoute's secret
 *   must hold a parseable tls.crt and tls.key (:178-205), or the route is left as it is and the
 *   operator reports Degraded;
 * - :235-280: the operator's entry in ingress.config status.componentRoutes (defaultHostname,
 *   currentHostnames = [route spec.host]);
 * - pkg/controllers/routercerts/controller.go:162-245: without a custom OAuth secret, the router's
 *   default certificate (the IngressController's spec.defaultCertificate, else the operator's own
 *   wildcard for spec.domain) must cover `oauth-openshift.<spec.domain>`, or RouterCertsDegraded.
 * - with the cluster's network given, the OAuth route endpoint check of route-health.ts: while no
 *   admitted OAuth host answers, the ClusterOperator is Degraded and not Available.
 */
import { X509Certificate } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  clients,
  INGRESS_CONFIG,
  INGRESS_CONTROLLERS,
  isNotFound,
  listRoutes,
  readIngressConfig,
  ROUTES,
  setOperatorCondition,
  startLoop,
  type Model,
} from './loop.js';
import { oauthRouteHealth, type ClusterNetwork } from './route-health.js';

const NAMESPACE = 'openshift-authentication';
const NAME = 'oauth-openshift';

export function startAuthenticationOperator(kc: KubeConfig, intervalMs = 200, network?: ClusterNetwork): Model {
  const { custom, core } = clients(kc);
  return startLoop('authentication-operator', intervalMs, async () => {
    const ingress = await readIngressConfig(custom);
    const defaultHost = `${NAME}.${ingress.spec.domain}`;
    const component = ingress.spec.componentRoutes?.find((c) => c.namespace === NAMESPACE && c.name === NAME);
    const problems: string[] = [];
    let host = component?.hostname ?? defaultHost;
    if (component?.servingCertKeyPairSecret) {
      const problem = await secretProblem(component.servingCertKeyPairSecret.name);
      if (problem) {
        problems.push(`CustomRouteControllerDegraded: ${problem}`);
        host = '';
      }
    } else {
      const problem = await routerCertProblem(ingress.spec.domain);
      if (problem) problems.push(`RouterCertsDegraded: ${problem}`);
    }
    const route = (await listRoutes(custom, NAMESPACE)).find((r) => r.metadata.name === NAME);
    if (route && host) {
      const spec = {
        host,
        to: { kind: 'Service', name: NAME, weight: 100 },
        port: { targetPort: 6443 },
        tls: { termination: 'passthrough', insecureEdgeTerminationPolicy: 'Redirect' },
        wildcardPolicy: 'None',
      };
      if (!isDeepStrictEqual(route.spec, spec))
        await custom.replaceNamespacedCustomObject({
          ...ROUTES,
          namespace: NAMESPACE,
          name: NAME,
          body: { ...route, spec },
        });
      await publishStatus(defaultHost, host);
    }
    const unreachable = network && (await oauthRouteHealth(custom, core, network));
    if (unreachable) problems.push(`OAuthServerRouteEndpointAccessibleControllerDegraded: ${unreachable}`);
    if (network)
      await setOperatorCondition(custom, 'authentication', {
        type: 'Available',
        status: unreachable ? 'False' : 'True',
        reason: unreachable ? 'OAuthServerRouteEndpointAccessibleController_EndpointUnavailable' : 'AsExpected',
        message: unreachable ? `OAuthServerRouteEndpointAccessibleControllerAvailable: ${unreachable}` : '',
      });
    await setOperatorCondition(custom, 'authentication', {
      type: 'Degraded',
      status: problems.length > 0 ? 'True' : 'False',
      reason: problems.length > 0 ? problems[0]!.split(':')[0]! : 'AsExpected',
      message: problems.join('; '),
    });
  });

  async function publishStatus(defaultHostname: string, current: string): Promise<void> {
    const cfg = (await custom.getClusterCustomObject({ ...INGRESS_CONFIG, name: 'cluster' })) as {
      status?: {
        componentRoutes?: { namespace: string; name: string; defaultHostname: string; currentHostnames: string[] }[];
      };
    };
    const entries = cfg.status?.componentRoutes ?? [];
    const mine = { namespace: NAMESPACE, name: NAME, defaultHostname, currentHostnames: [current] };
    const i = entries.findIndex((e) => e.namespace === NAMESPACE && e.name === NAME);
    if (i >= 0 && isDeepStrictEqual({ ...entries[i], ...mine }, entries[i])) return;
    const next = i >= 0 ? entries.map((e, j) => (j === i ? { ...e, ...mine } : e)) : [...entries, mine];
    await custom.patchClusterCustomObjectStatus({
      ...INGRESS_CONFIG,
      name: 'cluster',
      body: [
        {
          op: cfg.status ? 'replace' : 'add',
          path: cfg.status ? '/status/componentRoutes' : '/status',
          value: cfg.status ? next : { componentRoutes: next },
        },
      ],
    });
  }

  async function secretProblem(name: string): Promise<string | undefined> {
    try {
      const s = await core.readNamespacedSecret({ namespace: 'openshift-config', name });
      new X509Certificate(Buffer.from(s.data?.['tls.crt'] ?? '', 'base64'));
      if (!s.data?.['tls.key']) return `secret ${name} has no tls.key`;
      return undefined;
    } catch (e) {
      if (isNotFound(e)) return `secret ${name} not found`;
      if (e instanceof Error && !('code' in e && typeof e.code === 'number')) return `secret ${name}: ${e.message}`;
      throw e;
    }
  }

  /** Whether the router's default certificate covers oauth-openshift.<domain> (routercerts/controller.go). */
  async function routerCertProblem(domain: string): Promise<string | undefined> {
    const ic = (await custom.getNamespacedCustomObject({
      ...INGRESS_CONTROLLERS,
      namespace: 'openshift-ingress-operator',
      name: 'default',
    })) as { spec?: { defaultCertificate?: { name?: string } } };
    const name = ic.spec?.defaultCertificate?.name;
    // without one the ingress operator's own wildcard for spec.domain serves, and covers it
    if (!name) return undefined;
    const s = await core.readNamespacedSecret({ namespace: 'openshift-ingress', name });
    const cert = new X509Certificate(Buffer.from(s.data?.['tls.crt'] ?? '', 'base64'));
    return cert.checkHost(`${NAME}.${domain}`)
      ? undefined
      : `the default router certificate does not cover ${NAME}.${domain}`;
  }
}
