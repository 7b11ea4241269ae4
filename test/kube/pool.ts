/**
 * Shared test API servers: the main tier's files use one etcd and kube-apiserver per vitest worker
 * instead of starting their own (docs/testing.md says why, and what it costs).
 *
 * The servers belong to a manager in vitest's main process (test/kube/pool-setup.ts, a global
 * setup), which starts each on the first request of its worker and stops them all at the end of the
 * run. A file reaches its worker's server through the manager's control socket (a unix socket named
 * by SNO_RELOCATE_KUBE_POOL): `startCluster()` asks for it when the socket is set and the file wants
 * nothing that would make the server its own (test/kube/cluster.ts says which). Before handing a
 * server to a file, the manager puts it back as it started: its flags, a stopped kube-apiserver
 * started again, every object a file made deleted and every seeded one restored
 * (test/kube/reset.ts), and the test CRDs the next file asks for installed. The CRDs a server
 * already holds, unchanged since the manager installed them, are kept when the next file asks for
 * them again (installing CRDs is most of what a start costs); their objects are deleted.
 * test/kube/pool.test.ts proves that reset.
 */
import http from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import type { RestartOptions, TestCluster } from './cluster.js';
import type { ApplyCrdsOptions } from './install.js';

/** The environment variable that names the manager's control socket. */
export const POOL_ENV = 'SNO_RELOCATE_KUBE_POOL';

/** What a file gets to reach its worker's server. */
export interface PooledServer {
  kubeconfigPath: string;
  server: string;
  token: string;
  caPath: string;
  dir: string;
  etcdEndpoint: string;
  pids: { etcd?: number; apiServer?: number };
}

/** A request to the manager: which worker's server, and what to do with it. */
export type PoolRequest =
  | { op: 'acquire'; pool: string; crds?: ApplyCrdsOptions }
  | { op: 'start'; pool: string }
  | { op: 'stop'; pool: string; signal?: NodeJS.Signals }
  | { op: 'restart'; pool: string; restart: RestartOptions };

/** Sends one request to the manager and resolves with its answer (a PooledServer, or nothing). */
export function askPool(socketPath: string, request: PoolRequest): Promise<PooledServer> {
  return new Promise((resolve, reject) => {
    // a connection per request: Node's default agent keeps sockets alive, and a request sent on one
    // the manager is just closing (its keep-alive timeout, 5 s) fails with a reset
    const req = http.request({ socketPath, path: '/', method: 'POST', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(JSON.parse(body) as PooledServer)
          : reject(new Error(`test API pool, ${request.op}: ${body}`)),
      );
    });
    req.on('error', reject);
    req.end(JSON.stringify(request));
  });
}

/** This worker's pool: vitest numbers its workers from 1, one file at a time on each. */
export function poolId(): string {
  return process.env.VITEST_POOL_ID ?? '1';
}

/** Whether this file holds its worker's shared server now: a second server it asks for is its own. */
let holding = false;
export const holdingPooledCluster = (): boolean => holding;

/** The worker's shared server, put back as it started with the CRDs asked for, as a TestCluster. */
export async function acquirePooledCluster(socketPath: string, crds?: ApplyCrdsOptions): Promise<TestCluster> {
  const pool = poolId();
  holding = true;
  let current = await askPool(socketPath, { op: 'acquire', pool, ...(crds && { crds }) });
  let released = false;
  const ask = async (request: PoolRequest): Promise<void> => {
    if (released) throw new Error('cluster is stopped');
    current = await askPool(socketPath, request);
  };
  return {
    kubeconfigPath: current.kubeconfigPath,
    server: current.server,
    token: current.token,
    userTokens: {},
    caPath: current.caPath,
    dir: current.dir,
    etcdEndpoint: current.etcdEndpoint,
    kubeConfig() {
      const kc = new KubeConfig();
      kc.loadFromFile(current.kubeconfigPath);
      return kc;
    },
    // only the admin on a shared server: a file with users of its own gets a private one
    kubeconfigFor: (user: string) => Promise.reject(new Error(`no test user ${user} on a shared test API`)),
    pids: () => current.pids,
    stopApiServer: (signal) => ask({ op: 'stop', pool, ...(signal && { signal }) }),
    startApiServer: () => ask({ op: 'start', pool }),
    restartApiServer: (restart = {}) => ask({ op: 'restart', pool, restart }),
    // the manager resets the server when the next file asks for it: nothing to tell it here
    stop() {
      released = true;
      holding = false;
      return Promise.resolve();
    },
  };
}
