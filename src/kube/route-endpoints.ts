/**
 * The console and OAuth endpoints, checked as their operators check them from inside the cluster
 * (release-4.14 to 4.18), so that `health` names the one that keeps its operator unavailable:
 * - console-operator pkg/console/controllers/healthcheck/controller.go CheckRouteHealth: GET the
 *   URL of the active route (`console-custom` when ingress.config has a console componentRoute on
 *   another host, else `console`) at its admitted host (library-go routeapihelpers.IngressURI:
 *   https://<host>, no path), trusting the route's own spec.tls.certificate, the trusted CA bundle
 *   and openshift-config-managed/default-ingress-cert (getCA); a status other than 200 fails;
 * - cluster-authentication-operator pkg/controllers/oauthendpoints/oauth_endpoints_controller.go:
 *   GET https://<host>/healthz for each ingress.config status.componentRoutes currentHostnames entry
 *   of oauth-openshift that the router admitted (listOAuthRoutes, toHealthzURL), trusting
 *   default-ingress-cert, the active router certificate (the componentRoute's secret, else the
 *   router's default certificate) and the system bundle (getOAuthRouteTLSConfig); not 2xx fails.
 * Both clients take the proxy from their environment (http.ProxyFromEnvironment), which the cluster
 * version operator fills from proxy.config status, and resolve names through the cluster's DNS,
 * which forwards to the node's nameservers (the DNS operator's default `forward . /etc/resolv.conf`).
 * Go trusts a certificate of the pool as an anchor even when it is not self-signed (crypto/x509);
 * OpenSSL does not, so such a certificate presented by the server is taken as trusted here too. Go
 * matches the name against the subjectAltName only: a certificate naming it in its Common Name alone fails.
 */
import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import net, { isIP, type Socket } from 'node:net';
import tls from 'node:tls';
import { hostPort, resolveFamily } from '../base/addresses.js';
import { certificatesIn } from '../base/pem.js';
import type { Kube, KubeObject, ObjectRef } from '../ports/kube.js';
import { CONFIG_NAMESPACE, INGRESS_CONTROLLER, ROUTE_API, ROUTER_NAMESPACE, type SecretObject } from './openshift.js';

const TIMEOUT_MS = 5000;

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}
interface RouteIngress {
  host?: string;
  conditions?: { type: string; status: string }[];
}
interface Route extends KubeObject {
  spec?: { host?: string; tls?: { certificate?: string } };
  status?: { ingress?: RouteIngress[] };
}
interface Ingress extends KubeObject {
  spec?: {
    domain?: string;
    componentRoutes?: {
      namespace: string;
      name: string;
      hostname: string;
      servingCertKeyPairSecret?: { name: string };
    }[];
  };
  status?: { componentRoutes?: { namespace: string; name: string; currentHostnames?: string[] }[] };
}
interface Proxy extends KubeObject {
  spec?: { trustedCA?: { name?: string } };
  status?: { httpsProxy?: string; noProxy?: string };
}

/** One endpoint an operator checks: what it fetches and the certificates it trusts. */
export interface RouteEndpoint {
  component: 'console' | 'authentication';
  url: string;
  /** PEM certificates the operator's client trusts */
  trusted: string;
}

/** How the cluster reaches it: its nameservers, and the proxy its operators are given. */
export interface ClusterPath {
  nameservers: string[];
  httpsProxy?: string;
  noProxy?: string;
  /** the router's port: 443 on a cluster; another in tests */
  port?: number;
  timeoutMs?: number;
}

const configMap = (namespace: string, name: string): ObjectRef => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace,
  name,
});
const secret = (namespace: string, name: string): ObjectRef => ({ apiVersion: 'v1', kind: 'Secret', namespace, name });
const route = (namespace: string, name: string): ObjectRef => ({
  apiVersion: ROUTE_API,
  kind: 'Route',
  namespace,
  name,
});
const PROXY: ObjectRef = { apiVersion: 'config.openshift.io/v1', kind: 'Proxy', name: 'cluster' };
const INGRESS: ObjectRef = { apiVersion: 'config.openshift.io/v1', kind: 'Ingress', name: 'cluster' };

const admitted = (i: RouteIngress) => i.conditions?.some((c) => c.type === 'Admitted' && c.status === 'True') ?? false;
const tlsCrt = (s: SecretObject | undefined) => Buffer.from(s?.data?.['tls.crt'] ?? '', 'base64').toString('utf8');

/** The endpoints the two operators check, and why one cannot be checked yet (no admitted host). */
export async function routeEndpoints(kube: Kube): Promise<{ endpoints: RouteEndpoint[]; problems: string[] }> {
  const [ingress, proxy, defaultIngressCert] = await Promise.all([
    kube.get<Ingress>(INGRESS),
    kube.get<Proxy>(PROXY),
    kube.get<ConfigMapObject>(configMap('openshift-config-managed', 'default-ingress-cert')),
  ]);
  const trustedCaName = proxy?.spec?.trustedCA?.name;
  const trustedBundle = trustedCaName
    ? ((await kube.get<ConfigMapObject>(configMap(CONFIG_NAMESPACE, trustedCaName)))?.data?.['ca-bundle.crt'] ?? '')
    : '';
  // the injected trusted CA bundle is the proxy's trustedCA and the system's
  const system = tls.rootCertificates.join('\n');
  const ingressCa = defaultIngressCert?.data?.['ca-bundle.crt'] ?? '';
  const endpoints: RouteEndpoint[] = [];
  const problems: string[] = [];

  const customConsole = ingress?.spec?.componentRoutes?.find(
    (c) => c.namespace === 'openshift-console' && c.name === 'console',
  );
  const consoleName =
    customConsole && customConsole.hostname !== `console-openshift-console.${ingress?.spec?.domain}`
      ? 'console-custom'
      : 'console';
  const consoleRoute = await kube.get<Route>(route('openshift-console', consoleName));
  const consoleHost = consoleRoute?.status?.ingress?.find(
    (i) => i.host === consoleRoute.spec?.host && admitted(i),
  )?.host;
  if (!consoleHost) problems.push(`console: route openshift-console/${consoleName} is not admitted`);
  else
    endpoints.push({
      component: 'console',
      url: `https://${consoleHost}`,
      trusted: [consoleRoute?.spec?.tls?.certificate ?? '', trustedBundle, system, ingressCa].join('\n'),
    });

  const wanted =
    ingress?.status?.componentRoutes?.find(
      (c) => c.namespace === 'openshift-authentication' && c.name === 'oauth-openshift',
    )?.currentHostnames ?? [];
  const oauthRoute = await kube.get<Route>(route('openshift-authentication', 'oauth-openshift'));
  const hosts = wanted.filter((h) => oauthRoute?.status?.ingress?.some((i) => i.host === h && admitted(i)));
  if (hosts.length === 0 || hosts.length < wanted.length)
    problems.push(
      `authentication: route openshift-authentication/oauth-openshift is not admitted at ${wanted.join(', ') || 'any host'}`,
    );
  else {
    const customOauth = ingress?.spec?.componentRoutes?.find(
      (c) => c.namespace === 'openshift-authentication' && c.name === 'oauth-openshift',
    )?.servingCertKeyPairSecret?.name;
    const ic = await kube.get<KubeObject & { spec?: { defaultCertificate?: { name?: string } } }>(INGRESS_CONTROLLER);
    const routerCert = customOauth
      ? tlsCrt(await kube.get<SecretObject>(secret(CONFIG_NAMESPACE, customOauth)))
      : tlsCrt(
          await kube.get<SecretObject>(
            secret(ROUTER_NAMESPACE, ic?.spec?.defaultCertificate?.name ?? 'router-certs-default'),
          ),
        );
    for (const host of hosts)
      endpoints.push({
        component: 'authentication',
        url: `https://${host}/healthz`,
        trusted: [ingressCa, routerCert, trustedBundle, system].join('\n'),
      });
  }
  return { endpoints, problems };
}

/** Which of these ClusterOperators are not Available, or Degraded. */
export async function unavailable<T extends string>(kube: Kube, names: readonly T[]): Promise<T[]> {
  const operators = await Promise.all(
    names.map((name) =>
      kube.get<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>({
        apiVersion: 'config.openshift.io/v1',
        kind: 'ClusterOperator',
        name,
      }),
    ),
  );
  const is = (i: number, type: string, status: string) =>
    operators[i]?.status?.conditions?.some((c) => c.type === type && c.status === status) ?? false;
  return names.filter((_, i) => operators[i] && (!is(i, 'Available', 'True') || is(i, 'Degraded', 'True')));
}

/** The proxy the cluster's operators are given (proxy.config status), as ClusterPath fields. */
export async function clusterProxy(kube: Kube): Promise<Pick<ClusterPath, 'httpsProxy' | 'noProxy'>> {
  const status = (await kube.get<Proxy>(PROXY))?.status;
  return {
    ...(status?.httpsProxy && { httpsProxy: status.httpsProxy }),
    ...(status?.noProxy && { noProxy: status.noProxy }),
  };
}

/** Whether NO_PROXY exempts the host, as golang.org/x/net/http/httpproxy reads it (names, *, domains, IPs). */
export function bypassesProxy(host: string, noProxy: string | undefined): boolean {
  for (const raw of (noProxy ?? '').split(',')) {
    const entry = raw.trim().toLowerCase().replace(/:\d+$/, '');
    if (!entry) continue;
    if (entry === '*') return true;
    if (entry.includes('/') || isIP(entry)) {
      if (entry === host) return true;
      continue;
    }
    const domain = entry.replace(/^\*?\./, '');
    if (host === domain && !entry.startsWith('.')) return true;
    if (host.endsWith(`.${domain}`)) return true;
  }
  return false;
}

/** The proxy as said in a message: its credentials left out. */
const shownProxy = (proxy: URL) => `${proxy.protocol}//${proxy.host}`;

/** A socket to address:port, through the proxy by CONNECT when one is given. */
function connectVia(proxy: URL | undefined, target: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const done = (f: () => void) => {
      clearTimeout(timer);
      f();
    };
    if (!proxy) {
      const socket = net.connect(port, target, () => done(() => resolve(socket)));
      socket.once('error', (err: NodeJS.ErrnoException) =>
        done(() => reject(new Error(`${hostPort(target, port)}: ${err.code ?? err.message}`))),
      );
      return;
    }
    const auth = proxy.username
      ? {
          'Proxy-Authorization': `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString('base64')}`,
        }
      : {};
    const req = http.request({
      host: proxy.hostname,
      port: Number(proxy.port || 80),
      method: 'CONNECT',
      path: `${target}:${port}`,
      headers: { Host: `${target}:${port}`, ...auth },
    });
    req.once('connect', (res, socket) =>
      done(() =>
        res.statusCode === 200
          ? resolve(socket)
          : (socket.destroy(),
            reject(
              new Error(`the proxy ${shownProxy(proxy)} answered ${res.statusCode} to CONNECT ${target}:${port}`),
            )),
      ),
    );
    req.once('error', (err) =>
      done(() =>
        reject(new Error(`the proxy ${shownProxy(proxy)}: ${(err as NodeJS.ErrnoException).code ?? err.message}`)),
      ),
    );
    req.end();
  });
}

/**
 * Whether the chain the server presented reaches a certificate of the pool, as Go's verifier allows:
 * each certificate issued and signed by the next, all valid now, ending at one the pool holds.
 */
function anchoredInPool(peer: tls.DetailedPeerCertificate, pool: X509Certificate[], now: number): boolean {
  const held = new Set(pool.map((c) => c.fingerprint256));
  let cert: tls.DetailedPeerCertificate | undefined = peer;
  let below: X509Certificate | undefined;
  for (let depth = 0; cert?.raw && depth < 10; depth++) {
    const x = new X509Certificate(cert.raw);
    if (Date.parse(x.validFrom) > now || Date.parse(x.validTo) < now) return false;
    if (below && !(below.checkIssued(x) && below.verify(x.publicKey))) return false;
    if (held.has(x.fingerprint256)) return true;
    below = x;
    cert = cert.issuerCertificate === cert ? undefined : cert.issuerCertificate;
  }
  return false;
}

/** The TLS session to the endpoint, verified as the operator's Go client verifies it. */
function handshake(socket: Socket, host: string, trusted: string, timeoutMs: number): Promise<tls.TLSSocket> {
  const pool = certificatesIn(trusted);
  return new Promise((resolve, reject) => {
    const secure = tls.connect({
      socket,
      servername: host,
      ca: pool.map((c) => c.toString()),
      rejectUnauthorized: false,
    });
    secure.setTimeout(timeoutMs, () => {
      secure.destroy();
      reject(new Error(`no TLS handshake within ${timeoutMs} ms`));
    });
    secure.once('error', (err: NodeJS.ErrnoException) => reject(new Error(`TLS: ${err.code ?? err.message}`)));
    secure.once('secureConnect', () => {
      secure.setTimeout(0);
      const peer = secure.getPeerCertificate(true);
      const subject = peer.subject?.CN ?? 'no subject';
      if (!secure.authorized && !anchoredInPool(peer, pool, Date.now())) {
        secure.destroy();
        reject(
          new Error(
            `the certificate served (${subject}) does not chain to a CA the operator trusts (${String(secure.authorizationError)})`,
          ),
        );
        return;
      }
      // crypto/x509 VerifyHostname: the subjectAltName only, never the Common Name (Go 1.15 on)
      const leaf = new X509Certificate(peer.raw);
      if ((isIP(host) ? leaf.checkIP(host) : leaf.checkHost(host, { subject: 'never' })) === undefined) {
        secure.destroy();
        reject(new Error(`the certificate served (${subject}) is not for ${host}`));
        return;
      }
      resolve(secure);
    });
  });
}

/** GET over an open TLS session: the status code. */
function get(secure: tls.TLSSocket, url: URL, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: url.hostname,
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      createConnection: () => secure,
      timeout: timeoutMs,
    });
    req.once('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.once('error', reject);
    req.end();
  });
}

/**
 * Fetches the endpoint the way its operator's client does, from the cluster's side: the name through
 * the cluster's nameservers (or the proxy, which resolves it itself), the operator's trust. Returns
 * why it fails, or undefined when it answers as the operator wants or the node names no nameserver.
 */
export async function checkEndpoint(endpoint: RouteEndpoint, path: ClusterPath): Promise<string | undefined> {
  const url = new URL(endpoint.url);
  const host = url.hostname;
  const port = path.port ?? 443;
  const timeoutMs = path.timeoutMs ?? TIMEOUT_MS;
  const proxy = path.httpsProxy && !bypassesProxy(host, path.noProxy) ? new URL(path.httpsProxy) : undefined;
  const say = (why: string) => `${endpoint.component}: ${endpoint.url}: ${why}`;
  if (proxy) return fetchOver(() => connectVia(proxy, host, port, timeoutMs), endpoint, url, timeoutMs, say);
  // no nameserver to ask: the cluster's view cannot be taken from here, and the operator's own
  // condition already says the endpoint fails
  if (path.nameservers.length === 0) return undefined;
  // Go's resolver asks for both families; RFC 6724's default policy puts IPv6 first
  const [v6, v4] = await Promise.all([
    resolveFamily(path.nameservers, host, 6, timeoutMs),
    resolveFamily(path.nameservers, host, 4, timeoutMs),
  ]);
  const addresses = [v6, v4].flatMap((got) => (Array.isArray(got) ? got : []));
  const why = (got: string[] | string) => (Array.isArray(got) ? 'no address' : got);
  if (addresses.length === 0)
    return say(
      `${host} does not resolve through the cluster's DNS (${path.nameservers.join(', ')}: A ${why(v4)}, AAAA ${why(v6)})`,
    );
  // net.Dialer dials the addresses in turn until one connects (net/dial.go dialSerial)
  const refused: string[] = [];
  for (const address of addresses) {
    const socket = await connectVia(undefined, address, port, timeoutMs).catch((err: unknown) => {
      refused.push(err instanceof Error ? err.message : String(err));
      return undefined;
    });
    if (socket) return fetchOver(async () => socket, endpoint, url, timeoutMs, say);
  }
  return say(refused.join('; '));
}

/** The GET over TLS on the socket `open` gives, verified as the operator verifies it: why it fails. */
async function fetchOver(
  open: () => Promise<Socket>,
  endpoint: RouteEndpoint,
  url: URL,
  timeoutMs: number,
  say: (why: string) => string,
): Promise<string | undefined> {
  let secure: tls.TLSSocket | undefined;
  try {
    secure = await handshake(await open(), url.hostname, endpoint.trusted, timeoutMs);
    const status = await get(secure, url, timeoutMs);
    const ok = endpoint.component === 'console' ? status === 200 : status >= 200 && status < 300;
    return ok ? undefined : say(`answered ${status}`);
  } catch (err) {
    return say(err instanceof Error ? err.message : String(err));
  } finally {
    secure?.destroy();
  }
}
