/**
 * The console and authentication operators' route health checks (release-4.14 to 4.18), which
 * keep the operators unavailable until their routes answer from inside the cluster:
 * - console-operator pkg/console/controllers/healthcheck/controller.go (4.18 :133-153, :156-248):
 *   the active route is `console-custom` when the console componentRoute sets another hostname,
 *   else `console`; GET routeapihelpers.IngressURI(route, spec.host) (https://<admitted host>, no
 *   path; not admitted: RouteNotAdmitted); the pool is the route's spec.tls.certificate, then
 *   openshift-console/trusted-ca-bundle (injected by the network operator: proxy.config
 *   spec.trustedCA's bundle and the system's) and openshift-console/default-ingress-cert (the
 *   operator's copy of openshift-config-managed/default-ingress-cert), either missing: FailedLoadCA;
 *   http.ProxyFromEnvironment, 5 s timeout; anything but 200 fails. A failure makes
 *   RouteHealthDegraded and RouteHealthAvailable=False: the ClusterOperator is not Available.
 * - cluster-authentication-operator pkg/controllers/oauthendpoints/oauth_endpoints_controller.go
 *   (4.18 :157-204, :206-254, :284-290) with pkg/libs/endpointaccessible: GET
 *   https://<host>/healthz for each ingress.config status.componentRoutes currentHostnames entry
 *   the router admitted (any not admitted: an error); the pool is default-ingress-cert, the active
 *   router certificate (the synced componentRoute secret, else router-certs[spec.domain], the
 *   default certificate) and the system bundle, which the operator reads from its mounted
 *   trusted-ca-bundle; http.ProxyFromEnvironment; not 2xx fails. All failing:
 *   OAuthServerRouteEndpointAccessibleControllerAvailable=False and ...Degraded=True.
 * The copies the operators read (openshift-console/*, openshift-authentication/v4-0-config-system-*)
 * are read here at their sources. The operators' environment proxy is proxy.config status, which the
 * cluster version operator injects. Names resolve through the cluster DNS, which forwards to the
 * node's nameservers (`nameservers`); the request itself (DNS, CONNECT, TLS as Go verifies it) is
 * the operators' Go client, route-client.ts, given the endpoints and pools read here.
 */
import tls from 'node:tls';
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  INGRESS_CONFIG,
  INGRESS_CONTROLLERS,
  isNotFound,
  listRoutes,
  readIngressConfig,
  type RouteObject,
} from './loop.js';
import { operatorGet, type OperatorClient } from './route-client.js';

/** How the cluster's pods reach the routes: the nameservers the cluster DNS forwards to. */
export interface ClusterNetwork {
  nameservers: string[];
}

const admittedHost = (route: RouteObject | undefined, host: string | undefined) =>
  route?.status?.ingress?.find(
    (i) => (!host || i.host === host) && i.conditions?.some((c) => c.type === 'Admitted' && c.status === 'True'),
  )?.host;

async function bundle(core: CoreV1Api, namespace: string, name: string): Promise<string | undefined> {
  try {
    return (await core.readNamespacedConfigMap({ namespace, name })).data?.['ca-bundle.crt'] ?? '';
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

async function secretCrt(core: CoreV1Api, namespace: string, name: string): Promise<string> {
  try {
    const s = await core.readNamespacedSecret({ namespace, name });
    return Buffer.from(s.data?.['tls.crt'] ?? '', 'base64').toString('utf8');
  } catch (e) {
    if (isNotFound(e)) return '';
    throw e;
  }
}

async function proxyAndTrust(custom: CustomObjectsApi, core: CoreV1Api, network: ClusterNetwork) {
  const proxy = (await custom.getClusterCustomObject({
    group: 'config.openshift.io',
    version: 'v1',
    plural: 'proxies',
    name: 'cluster',
  })) as { spec?: { trustedCA?: { name?: string } }; status?: { httpsProxy?: string; noProxy?: string } };
  const trustedCA = proxy.spec?.trustedCA?.name;
  const trusted = [
    (trustedCA && (await bundle(core, 'openshift-config', trustedCA))) || '',
    ...tls.rootCertificates,
  ].join('\n');
  const client: OperatorClient = {
    nameservers: network.nameservers,
    ...(proxy.status?.httpsProxy && { httpsProxy: proxy.status.httpsProxy }),
    ...(proxy.status?.noProxy && { noProxy: proxy.status.noProxy }),
  };
  return { client, trusted };
}

/** The console's route health: undefined when healthy, else the operator's reason and message. */
export async function consoleRouteHealth(
  custom: CustomObjectsApi,
  core: CoreV1Api,
  network: ClusterNetwork,
): Promise<{ reason: string; message: string } | undefined> {
  const ingress = await readIngressConfig(custom);
  const component = ingress.spec.componentRoutes?.find(
    (c) => c.namespace === 'openshift-console' && c.name === 'console',
  );
  const name =
    component && component.hostname !== `console-openshift-console.${ingress.spec.domain}`
      ? 'console-custom'
      : 'console';
  const route = (await listRoutes(custom, 'openshift-console')).find((r) => r.metadata.name === name);
  if (!route) return { reason: 'FailedRouteGet', message: `route ${name} not found` };
  const host = admittedHost(route, route.spec.host);
  if (!host) return { reason: 'RouteNotAdmitted', message: `${name} route is not admitted` };
  const ingressCert = await bundle(core, 'openshift-config-managed', 'default-ingress-cert');
  if (ingressCert === undefined) return { reason: 'FailedLoadCA', message: 'configmap default-ingress-cert not found' };
  const { client, trusted } = await proxyAndTrust(custom, core, network);
  const routeCert = (route.spec as { tls?: { certificate?: string } }).tls?.certificate ?? '';
  const url = `https://${host}`;
  const status = await operatorGet(url, [routeCert, trusted, ingressCert].join('\n'), client).catch(
    (e: Error) => e.message,
  );
  if (typeof status === 'string') return { reason: 'FailedGet', message: `failed to GET route (${url}): ${status}` };
  return status === 200
    ? undefined
    : { reason: 'StatusError', message: `route not yet available, ${url} returns '${status}'` };
}

/** The OAuth route's endpoint check: undefined when one endpoint answers, else the error. */
export async function oauthRouteHealth(
  custom: CustomObjectsApi,
  core: CoreV1Api,
  network: ClusterNetwork,
): Promise<string | undefined> {
  const ingress = (await custom.getClusterCustomObject({ ...INGRESS_CONFIG, name: 'cluster' })) as {
    spec: {
      domain: string;
      componentRoutes?: { namespace: string; name: string; servingCertKeyPairSecret?: { name: string } }[];
    };
    status?: { componentRoutes?: { namespace: string; name: string; currentHostnames?: string[] }[] };
  };
  const wanted = ingress.status?.componentRoutes?.find(
    (c) => c.namespace === 'openshift-authentication' && c.name === 'oauth-openshift',
  )?.currentHostnames;
  if (!wanted)
    return 'ingress.config/cluster does not yet have status for the "openshift-authentication/oauth-openshift" route';
  const route = (await listRoutes(custom, 'openshift-authentication')).find(
    (r) => r.metadata.name === 'oauth-openshift',
  );
  const hosts = wanted.filter((h) => admittedHost(route, h));
  if (hosts.length < wanted.length || hosts.length === 0)
    return `route "openshift-authentication/oauth-openshift": the following hostnames have not yet been admitted: ${wanted.filter((h) => !hosts.includes(h)).join(' ')}`;
  const ingressCert = await bundle(core, 'openshift-config-managed', 'default-ingress-cert');
  if (ingressCert === undefined) return 'configmaps "default-ingress-cert" not found';
  const custom_ = ingress.spec.componentRoutes?.find(
    (c) => c.namespace === 'openshift-authentication' && c.name === 'oauth-openshift',
  )?.servingCertKeyPairSecret?.name;
  const ic = (await custom.getNamespacedCustomObject({
    ...INGRESS_CONTROLLERS,
    namespace: 'openshift-ingress-operator',
    name: 'default',
  })) as { spec?: { defaultCertificate?: { name?: string } } };
  const routerCert = custom_
    ? await secretCrt(core, 'openshift-config', custom_)
    : await secretCrt(core, 'openshift-ingress', ic.spec?.defaultCertificate?.name ?? 'router-certs-default');
  const { client, trusted } = await proxyAndTrust(custom, core, network);
  const pool = [ingressCert, routerCert, trusted].join('\n');
  const failed = await Promise.all(
    hosts.map(async (h) => {
      const url = `https://${h}/healthz`;
      const status = await operatorGet(url, pool, client).catch((e: Error) => `Get "${url}": ${e.message}`);
      if (typeof status === 'string') return status;
      return status >= 200 && status <= 299 ? undefined : `"${url}" returned "${status}"`;
    }),
  );
  const errors = failed.filter((f): f is string => f !== undefined);
  return errors.length === hosts.length ? errors.join('; ') : undefined;
}
