/**
 * route.openshift.io served through API aggregation, as OpenShift serves it: an APIService
 * `v1.route.openshift.io` backed by a small API server of the tests, which the real kube-aggregator
 * in the test kube-apiserver proxies to (openshift/cluster-openshift-apiserver-operator
 * bindata/v3.11.0/openshift-apiserver/apiservice-template.yaml registers the openshift-apiserver so).
 *
 * The server serves discovery for route.openshift.io/v1 itself and keeps its routes in a CRD of
 * the same shape under another group of the same length (routes.sno-test.io), rewriting the group in
 * paths, queries and bodies both ways: the API machinery of the test kube-apiserver stores them, so
 * resourceVersions, conflicts, merge patches, server-side apply, the status subresource and watches
 * behave as upstream. Requests are made as the user the aggregator names (X-Remote-User and
 * X-Remote-Group, through impersonation), so RBAC applies as it does upstream.
 *
 * What the aggregator answers while this server is away is the subject of the fault tests: `stop()`
 * closes it (connections refused, so the aggregator answers 503), `start()` serves again on the same
 * port. The service is an ExternalName service: the aggregator resolves it to 127.0.0.1 and the port
 * of the APIService (k8s.io/apiserver pkg/util/proxy/proxy.go ResolveCluster), with no kube-proxy.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  ApiextensionsV1Api,
  ApiException,
  ApiregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import type { TestCluster } from './cluster.js';
import { opensslSelfSigned } from '../helpers/openssl.js';
import { listCrds } from './install.js';

export const ROUTE_GROUP = 'route.openshift.io';
/** where the routes are stored: as long as ROUTE_GROUP, so a rewritten body keeps its length */
export const STORAGE_GROUP = 'routes.sno-test.io';
const SERVICE = { namespace: 'default', name: 'openshift-apiserver' };
const APISERVICE = `v1.${ROUTE_GROUP}`;

export interface AggregatedRoutes {
  /** the APIService's name, v1.route.openshift.io */
  apiService: string;
  port: number;
  /** whether the server is serving */
  serving(): boolean;
  /** closes the server and its connections: the aggregator then answers 503 for routes */
  stop(): Promise<void>;
  /** serves again on the same port */
  start(): Promise<void>;
  close(): Promise<void>;
}

const swap = (text: string, from: string, to: string) => text.split(from).join(to);

/** A serving certificate for the service's name, as the aggregator verifies it (ServerName <name>.<namespace>.svc). */
function servingCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sno-relocate-aggregated-'));
  try {
    const host = `${SERVICE.name}.${SERVICE.namespace}.svc`;
    const { crt, key } = opensslSelfSigned(dir, 'tls', {
      subject: `/CN=${host}`,
      days: 2,
      san: `DNS:${host},IP:127.0.0.1`,
    });
    return {
      key: readFileSync(key, 'utf8'),
      cert: readFileSync(crt, 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The route CRD of the test CRDs, moved to the storage group. */
function storageCrd(): V1CustomResourceDefinition {
  const route = listCrds().find((c) => c.group === ROUTE_GROUP)!;
  const crd = structuredClone(route.manifest);
  crd.metadata = { name: `${route.plural}.${STORAGE_GROUP}` };
  crd.spec.group = STORAGE_GROUP;
  return crd;
}

const discovery = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: `${ROUTE_GROUP}/v1`,
  resources: [
    {
      name: 'routes',
      singularName: 'route',
      namespaced: true,
      kind: 'Route',
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      categories: ['all'],
    },
    { name: 'routes/status', singularName: '', namespaced: true, kind: 'Route', verbs: ['get', 'patch', 'update'] },
  ],
};
const group = {
  kind: 'APIGroup',
  apiVersion: 'v1',
  name: ROUTE_GROUP,
  versions: [{ groupVersion: `${ROUTE_GROUP}/v1`, version: 'v1' }],
  preferredVersion: { groupVersion: `${ROUTE_GROUP}/v1`, version: 'v1' },
};

const json = (res: http.ServerResponse, code: number, body: object) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/**
 * Installs the storage CRD, starts the server and registers the APIService; resolves once the
 * aggregator reports it Available and routes can be listed through the test API.
 */
export async function serveRoutesByAggregation(cluster: TestCluster, kc: KubeConfig): Promise<AggregatedRoutes> {
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const registration = kc.makeApiClient(ApiregistrationV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  await ext.createCustomResourceDefinition({ body: storageCrd() });

  const upstream = new URL(cluster.server);
  const agent = new https.Agent({ keepAlive: true, ca: readFileSync(cluster.caPath) });
  const tls = servingCertificate();
  const sockets = new Set<Socket>();

  const proxy = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => {
    const url = swap(req.url ?? '/', ROUTE_GROUP, STORAGE_GROUP);
    const headers: http.OutgoingHttpHeaders = {
      authorization: `Bearer ${cluster.token}`,
      accept: 'application/json',
      ...(req.headers['content-type'] && { 'content-type': req.headers['content-type'] }),
    };
    const user = req.headers['x-remote-user'];
    if (typeof user === 'string') {
      headers['impersonate-user'] = user;
      // one header each (node joins repeated headers with commas in req.headers)
      const groups = req.headersDistinct['x-remote-group'];
      if (groups) headers['impersonate-group'] = groups;
    }
    const watching = /[?&]watch=(1|true)/.test(url) || url.includes('/watch/');
    const out = https.request(
      { host: upstream.hostname, port: upstream.port, path: url, method: req.method, headers, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, {
          'content-type': answer.headers['content-type'] ?? 'application/json',
        });
        if (watching) {
          res.flushHeaders();
          // one event a line: a line is rewritten whole, never a group name split across chunks
          let partial = '';
          answer.setEncoding('utf8');
          answer.on('data', (chunk: string) => {
            const lines = (partial + chunk).split('\n');
            partial = lines.pop()!;
            for (const line of lines) res.write(`${swap(line, STORAGE_GROUP, ROUTE_GROUP)}\n`);
          });
          answer.on('end', () => res.end(swap(partial, STORAGE_GROUP, ROUTE_GROUP)));
        } else {
          const chunks: Buffer[] = [];
          answer.on('data', (c: Buffer) => chunks.push(c));
          answer.on('end', () => res.end(swap(Buffer.concat(chunks).toString('utf8'), STORAGE_GROUP, ROUTE_GROUP)));
        }
        answer.on('error', () => res.destroy());
      },
    );
    out.on('error', (err) =>
      res.headersSent
        ? res.destroy()
        : json(res, 503, {
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            message: `storage unavailable: ${err.message}`,
            reason: 'ServiceUnavailable',
            code: 503,
          }),
    );
    // the client went away (a watch it closed): so does the request for it
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    out.end(body.length ? swap(body.toString('utf8'), ROUTE_GROUP, STORAGE_GROUP) : undefined);
  };

  const server = https.createServer(tls, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const pathname = new URL(req.url ?? '/', 'https://x').pathname;
      if (pathname === `/apis/${ROUTE_GROUP}/v1`) return json(res, 200, discovery);
      if (pathname === `/apis/${ROUTE_GROUP}`) return json(res, 200, group);
      if (pathname.startsWith(`/apis/${ROUTE_GROUP}/v1/`)) return proxy(req, res, Buffer.concat(chunks));
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('404 page not found\n');
    });
  });
  // idle connections stay open, as a Go API server keeps them: node's 5 s default closes one the
  // aggregator is about to reuse, which it reports as a 503 "connection reset by peer"
  server.keepAliveTimeout = 0;
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as { port: number }).port);
      });
    });
  const port = await listen(0);
  const stop = async () => {
    if (!server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };

  try {
    await core.createNamespacedService({
      namespace: SERVICE.namespace,
      body: {
        metadata: { name: SERVICE.name },
        spec: { type: 'ExternalName', externalName: '127.0.0.1', ports: [{ name: 'https', port }] },
      },
    });
    await registration.createAPIService({
      body: {
        metadata: { name: APISERVICE },
        spec: {
          group: ROUTE_GROUP,
          version: 'v1',
          service: { ...SERVICE, port },
          caBundle: Buffer.from(tls.cert).toString('base64'),
          groupPriorityMinimum: 9900,
          versionPriority: 15,
        },
      },
    });
    await waitAvailable(registration, kc);
  } catch (err) {
    await stop();
    agent.destroy();
    throw err;
  }

  return {
    apiService: APISERVICE,
    port,
    serving: () => server.listening,
    stop,
    async start() {
      if (!server.listening) await listen(port);
    },
    async close() {
      await stop();
      agent.destroy();
    },
  };
}

/** Until the aggregator reports the APIService Available and a list of routes answers through it. */
async function waitAvailable(registration: ApiregistrationV1Api, kc: KubeConfig): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + 60_000;
  let last = '';
  for (let delay = 50; ; delay = Math.min(1_000, delay * 2)) {
    try {
      const s = await registration.readAPIService({ name: APISERVICE });
      const available = s.status?.conditions?.find((c) => c.type === 'Available');
      if (available?.status === 'True') {
        await custom.listCustomObjectForAllNamespaces({
          group: ROUTE_GROUP,
          version: 'v1',
          plural: 'routes',
          limit: 1,
        });
        return;
      }
      last = `${available?.reason ?? 'no condition'}: ${available?.message ?? ''}`;
    } catch (err) {
      last = err instanceof ApiException ? `HTTP ${err.code}: ${String(err.body)}` : String(err);
    }
    if (Date.now() > deadline) throw new Error(`APIService ${APISERVICE} not available within 60 s (${last})`);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
