/**
 * vitest global setup: the manager of the shared test API servers (test/kube/pool.ts). Runs in
 * vitest's main process, so the servers are its children: they outlive each test file's process
 * and are stopped, with their folders removed, when the run ends.
 *
 * Without the binaries (scripts/ensure-kube-apiserver.sh not run) it starts nothing, and each file
 * that wants an API meets the usual error of startCluster.
 */
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiextensionsV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { missingBinaries, startCluster, type TestCluster } from './cluster.js';
import { applyCrds, selectCrds, type ApplyCrdsOptions } from './install.js';
import { POOL_ENV, type PooledServer, type PoolRequest } from './pool.js';
import { resetToBaseline, takeBaseline, type Baseline } from './reset.js';

interface Entry {
  cluster: TestCluster;
  baseline: Baseline;
  /** a file has had it since the last reset */
  used: boolean;
  /** flags rolled out by a file (a kube-apiserver revision) that the next file must not see */
  flagged: boolean;
  stopped: boolean;
  /** the CRDs this manager installed, by name: their uid and generation then */
  crds: Map<string, { uid: string; generation: number }>;
}

async function fresh(): Promise<Entry> {
  const cluster = await startCluster({ private: 'the pool itself' });
  try {
    const baseline = await takeBaseline(cluster.kubeConfig());
    return { cluster, baseline, used: false, flagged: false, stopped: false, crds: new Map() };
  } catch (e) {
    await cluster.stop();
    throw e;
  }
}

/** A CRD as this manager installed it: neither replaced nor changed since. */
function unchanged(entry: Entry, o: KubernetesObject): boolean {
  const mine = entry.crds.get(o.metadata?.name ?? '');
  return !!mine && o.metadata?.uid === mine.uid && o.metadata?.generation === mine.generation;
}

/**
 * The server as it started, with the CRDs a file asks for: its own flags, kube-apiserver running,
 * the objects of its baseline only, and those CRDs, kept from the last file where they are unchanged.
 */
async function reset(entry: Entry, crds: ApplyCrdsOptions | undefined): Promise<Entry> {
  const { cluster } = entry;
  const wanted = new Set(crds ? selectCrds(crds).map((c) => c.name) : []);
  try {
    if (entry.flagged) await cluster.restartApiServer({ extraArgs: [] });
    else if (entry.stopped) await cluster.startApiServer();
    entry.flagged = entry.stopped = false;
    const keep = (o: KubernetesObject) =>
      o.kind === 'CustomResourceDefinition' && wanted.has(o.metadata?.name ?? '') && unchanged(entry, o);
    await resetToBaseline(cluster.kubeConfig(), entry.baseline, { keep });
    for (const name of entry.crds.keys()) if (!wanted.has(name)) entry.crds.delete(name);
    await installCrds(entry, crds);
    return entry;
  } catch (e) {
    // isolation first: a server that cannot be put back is replaced
    const body = (e as { body?: unknown }).body;
    console.warn(
      `test API pool: ${(e as Error).message.split('\n')[0]} ${body ? JSON.stringify(body).slice(0, 300) : ''}; starting a new server`,
    );
    await cluster.stop();
    const next = await fresh();
    await installCrds(next, crds);
    return next;
  }
}

/** Installs the CRDs asked for that the server does not hold, and notes each as installed. */
async function installCrds(entry: Entry, crds: ApplyCrdsOptions | undefined): Promise<void> {
  if (!crds) return;
  const ext = entry.cluster.kubeConfig().makeApiClient(ApiextensionsV1Api);
  const held = new Set((await ext.listCustomResourceDefinition()).items.map((c) => c.metadata?.name));
  const missing = selectCrds(crds).filter((c) => !held.has(c.name));
  if (missing.length > 0) await applyCrds(entry.cluster.kubeconfigPath, { ...crds, only: missing.map((c) => c.name) });
  for (const c of (await ext.listCustomResourceDefinition()).items) {
    const { name, uid, generation } = c.metadata ?? {};
    if (name && uid && generation !== undefined && missing.some((m) => m.name === name))
      entry.crds.set(name, { uid, generation });
  }
}

function describe(entry: Entry): PooledServer {
  const c = entry.cluster;
  return {
    kubeconfigPath: c.kubeconfigPath,
    server: c.server,
    token: c.token,
    caPath: c.caPath,
    dir: c.dir,
    etcdEndpoint: c.etcdEndpoint,
    pids: c.pids(),
  };
}

export default async function setup(): Promise<() => Promise<void>> {
  if (missingBinaries().length > 0 || process.env[POOL_ENV] === 'off') return async () => {};
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sno-relocate-kube-pool-'));
  const socketPath = path.join(dir, 'control.sock');
  const entries = new Map<string, Promise<Entry>>();

  const handle = async (r: PoolRequest): Promise<PooledServer> => {
    const held = entries.get(r.pool);
    if (r.op === 'acquire') {
      const started = async (e: Entry) => {
        if (e.used) return reset(e, r.crds);
        await installCrds(e, r.crds);
        return e;
      };
      const next = (held ?? Promise.reject(new Error('none yet'))).then(started, () => fresh().then(started));
      const entry = next.then((e) => Object.assign(e, { used: true }));
      entries.set(r.pool, entry);
      return describe(await entry);
    }
    if (!held) throw new Error(`no server for worker ${r.pool}`);
    const entry = await held;
    if (r.op === 'stop') {
      await entry.cluster.stopApiServer(r.signal);
      entry.stopped = true;
    } else if (r.op === 'start') {
      await entry.cluster.startApiServer();
      entry.stopped = false;
    } else {
      await entry.cluster.restartApiServer(r.restart);
      if (r.restart.extraArgs) entry.flagged = r.restart.extraArgs.length > 0;
      entry.stopped = false;
    }
    return describe(entry);
  };

  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      handle(JSON.parse(body) as PoolRequest).then(
        (answer) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer)),
        (e: Error) => res.writeHead(500).end(e.message),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  process.env[POOL_ENV] = socketPath;

  return async () => {
    process.env[POOL_ENV] = '';
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.all(
      [...entries.values()].map((e) =>
        e.then(
          (x) => x.cluster.stop(),
          () => undefined,
        ),
      ),
    );
    await rm(dir, { recursive: true, force: true });
  };
}
