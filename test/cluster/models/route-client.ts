/**
 * The HTTP client the console and authentication operators check their routes with, from inside
 * the cluster: a Go net/http client with
 * - Proxy: http.ProxyFromEnvironment (console-operator pkg/console/controllers/healthcheck/controller.go
 *   clientWithCA, master @68415718; cluster-authentication-operator
 *   pkg/libs/endpointaccessible/endpoint_accessible_controller.go buildTLSClient, master @f3df4f5b):
 *   golang.org/x/net http/httpproxy/proxy.go (master @0ca694d2) proxyForURL and useProxy: an https
 *   URL goes through HTTPS_PROXY unless the host is localhost or a loopback IP, or NO_PROXY has `*`,
 *   the IP, a CIDR holding it, or a domain entry (`a.b`, `.a.b`, `*.a.b`, with or without a port)
 *   that is a suffix of the host (`a.b` also the host itself) (init :207-273, domainMatch.match
 *   :365-373); through the proxy, a CONNECT to host:port;
 * - names resolved by Go's resolver through the cluster DNS (both families, IPv6 first as RFC 6724's
 *   default policy sorts them) and dialled in turn (net/dial.go dialSerial);
 * - TLS as crypto/tls verifies with RootCAs only (handshake_client.go verifyServerCertificate,
 *   crypto/x509 Verify): the server's first certificate is the leaf and the rest intermediates, a
 *   certificate in the pool is an anchor whether or not it is self-signed, and the name is checked
 *   against the DNS names of the subjectAltName only (Go 1.15 on: never the Common Name);
 * - Timeout: 5 s (both controllers).
 * The vectors in upstream/x509-verify.json are crypto/x509's own answers (upstream/x509-verify.go).
 */
import { X509Certificate } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import http from 'node:http';
import net, { isIP } from 'node:net';
import tls from 'node:tls';

export interface OperatorClient {
  /** the cluster DNS's upstreams (host or host:port) */
  nameservers: string[];
  /** HTTPS_PROXY and NO_PROXY of the operator's environment */
  httpsProxy?: string;
  noProxy?: string;
  /** the router's port; 443 but in tests */
  port?: number;
}

const TIMEOUT_MS = 5000;

/** httpproxy useProxy: whether a request to `host` goes through the proxy. */
export function useProxy(host: string, noProxy = ''): boolean {
  const name = host.toLowerCase();
  if (name === 'localhost') return false;
  const ip = isIP(name) ? name : undefined;
  // net.IP IsLoopback
  if (ip && (isIP(ip) === 4 ? ip.startsWith('127.') : ip === '::1')) return false;
  for (const raw of noProxy.split(',')) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return false;
    const [address, prefix] = entry.split('/');
    if (prefix !== undefined && isIP(address!)) {
      if (ip && isIP(ip) === isIP(address!)) {
        const block = new net.BlockList();
        block.addSubnet(address!, Number(prefix), isIP(address!) === 6 ? 'ipv6' : 'ipv4');
        if (block.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4')) return false;
      }
      continue;
    }
    const bracketed = /^\[(.+)\](?::\d+)?$/.exec(entry);
    const entryHost = bracketed ? bracketed[1]! : isIP(entry) ? entry : entry.replace(/:\d+$/, '');
    if (isIP(entryHost)) {
      if (ip === entryHost) return false;
      continue;
    }
    if (ip) continue;
    const suffix = entryHost.startsWith('*.') ? entryHost.slice(1) : entryHost;
    const dotted = suffix.startsWith('.') ? suffix : `.${suffix}`;
    if (name.endsWith(dotted) || (!suffix.startsWith('.') && name === suffix)) return false;
  }
  return true;
}

/** crypto/x509 VerifyHostname: the subjectAltName's DNS names (or IPs) only. */
function nameMatches(host: string, cert: X509Certificate): boolean {
  return isIP(host) ? cert.checkIP(host) !== undefined : cert.checkHost(host, { subject: 'never' }) !== undefined;
}

async function resolve(nameservers: string[], host: string): Promise<string[]> {
  if (isIP(host)) return [host];
  const resolver = new Resolver({ timeout: TIMEOUT_MS, tries: 1 });
  resolver.setServers(nameservers);
  const [v6, v4] = await Promise.all([
    resolver.resolve6(host).catch(() => []),
    resolver.resolve4(host).catch(() => []),
  ]);
  const addresses = [...v6, ...v4];
  if (addresses.length === 0) throw new Error(`dial tcp: lookup ${host} on ${nameservers.join(', ')}: no such host`);
  return addresses;
}

function dial(address: string, port: number): Promise<net.Socket> {
  return new Promise((done, fail) => {
    const socket = net.connect({ host: address, port, timeout: TIMEOUT_MS });
    socket.once('connect', () => done(socket.setTimeout(0)));
    socket.once('timeout', () => socket.destroy(new Error(`dial tcp ${address}:${port}: i/o timeout`)));
    socket.once('error', (e: NodeJS.ErrnoException) => fail(new Error(`dial tcp ${address}:${port}: ${e.code}`)));
  });
}

async function connectThrough(proxy: URL, host: string, port: number, nameservers: string[]): Promise<net.Socket> {
  // the proxy's own name resolves through the cluster DNS too
  const [proxyAddress] = await resolve(nameservers, proxy.hostname.replace(/^\[|\]$/g, ''));
  return new Promise((done, fail) => {
    const credentials = proxy.username
      ? `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`
      : undefined;
    const req = http.request({
      host: proxyAddress,
      port: Number(proxy.port || 80),
      method: 'CONNECT',
      path: `${host}:${port}`,
      timeout: TIMEOUT_MS,
      ...(credentials && {
        headers: { 'Proxy-Authorization': `Basic ${Buffer.from(credentials).toString('base64')}` },
      }),
    });
    req.once('connect', (res, socket) => {
      if (res.statusCode === 200) return done(socket);
      socket.destroy();
      fail(new Error(`proxyconnect tcp: ${res.statusCode} ${res.statusMessage}`));
    });
    req.once('timeout', () => req.destroy(new Error('proxyconnect tcp: i/o timeout')));
    req.once('error', (e: NodeJS.ErrnoException) => fail(new Error(`proxyconnect tcp: ${e.code ?? e.message}`)));
    req.end();
  });
}

/** The TCP connection net/http makes for an https URL: through the proxy, or to the first address that answers. */
async function open(url: URL, client: OperatorClient): Promise<net.Socket> {
  const port = client.port ?? 443;
  if (client.httpsProxy && useProxy(url.hostname, client.noProxy))
    return connectThrough(new URL(client.httpsProxy), url.hostname, port, client.nameservers);
  const failed: string[] = [];
  for (const address of await resolve(client.nameservers, url.hostname)) {
    const socket = await dial(address, port).catch((e: Error) => void failed.push(e.message));
    if (socket) return socket;
  }
  throw new Error(failed.join('; '));
}

/** crypto/tls's client handshake with RootCAs: the pool's certificates are anchors, names are SANs. */
function handshake(socket: net.Socket, host: string, pool: string): Promise<tls.TLSSocket> {
  return new Promise((done, fail) => {
    const secure = tls.connect({
      socket,
      ...(!isIP(host) && { servername: host }),
      ca: pool,
      allowPartialTrustChain: true,
      checkServerIdentity: (name, peer) =>
        nameMatches(name, new X509Certificate(peer.raw))
          ? undefined
          : new Error(`x509: certificate is not valid for ${name}`),
    });
    secure.setTimeout(TIMEOUT_MS, () => secure.destroy(new Error('net/http: TLS handshake timeout')));
    secure.once('secureConnect', () => done(secure.setTimeout(0)));
    secure.once('error', (e: NodeJS.ErrnoException) =>
      fail(new Error(e.code === 'ERR_TLS_CERT_ALTNAME_INVALID' || !e.code ? e.message : `tls: ${e.code}`)),
    );
  });
}

/** GET `url` as the operator's client does, trusting the PEM certificates of `pool`: the status code. */
export async function operatorGet(url: string, pool: string, client: OperatorClient): Promise<number> {
  const target = new URL(url);
  const socket = await open(target, client);
  // an empty pool trusts nothing (tls would take the system's instead)
  if (!pool.includes('-----BEGIN CERTIFICATE-----')) {
    socket.destroy();
    throw new Error('tls: x509: certificate signed by unknown authority');
  }
  const secure = await handshake(socket, target.hostname, pool);
  return new Promise((done, fail) => {
    const req = http.request({
      host: target.hostname,
      path: `${target.pathname}${target.search}`,
      createConnection: () => secure,
      timeout: TIMEOUT_MS,
    });
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => secure.destroy());
      done(res.statusCode ?? 0);
    });
    req.once('timeout', () => req.destroy(new Error('Client.Timeout exceeded while awaiting headers')));
    req.once('error', (e) => fail(e));
    req.end();
  });
}
