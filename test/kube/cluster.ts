/**
 * A real Kubernetes API for tests: etcd and kube-apiserver v1.20.2, started as children of the test
 * process on free loopback ports, in a temporary folder.
 *
 * - kube-apiserver: `$SNO_RELOCATE_KUBE_APISERVER`, else the binary that
 *   `scripts/ensure-kube-apiserver.sh` builds and caches at
 *   `${SNO_RELOCATE_CACHE:-~/.cache/sno-relocate}/kube-apiserver-v1.20.2/kube-apiserver`.
 * - etcd: `$SNO_RELOCATE_ETCD`, else `etcd` on PATH (Debian package etcd-server).
 *
 * The server serves HTTPS with a self-signed certificate it makes in its --cert-dir; the kubeconfig
 * written here trusts exactly that certificate. Authentication is a static token for `admin` in
 * `system:masters` (plus any extra users asked for); authorization is RBAC.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { freeTcpPort } from '../helpers/ports.js';
import { applyCrds, type ApplyCrdsOptions } from './install.js';
import { acquirePooledCluster, holdingPooledCluster, POOL_ENV } from './pool.js';

export const KUBE_VERSION = '1.20.2';
/**
 * The build recipe of scripts/ensure-kube-apiserver.sh (its RECIPE): a cached binary stamped with
 * another one lacks a fix the tests rely on.
 */
export const KUBE_APISERVER_RECIPE = '2';

/** Where scripts/ensure-kube-apiserver.sh caches what it builds. */
export function cacheDir(): string {
  return process.env.SNO_RELOCATE_CACHE || path.join(os.homedir(), '.cache', 'sno-relocate');
}

/** The kube-apiserver binary to use (it may not exist: see {@link missingBinaries}). */
export function kubeApiServerPath(): string {
  return (
    process.env.SNO_RELOCATE_KUBE_APISERVER ||
    path.join(cacheDir(), `kube-apiserver-v${KUBE_VERSION}`, 'kube-apiserver')
  );
}

/** The etcd binary to use: `$SNO_RELOCATE_ETCD`, else the first `etcd` on PATH, else /usr/bin/etcd. */
export function etcdPath(): string {
  if (process.env.SNO_RELOCATE_ETCD) return process.env.SNO_RELOCATE_ETCD;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'etcd'))) return path.join(dir, 'etcd');
  }
  return '/usr/bin/etcd';
}

/** The binaries that are missing, as messages; empty when the test API can start. */
export function missingBinaries(): string[] {
  const missing: string[] = [];
  const apiserver = kubeApiServerPath();
  if (!existsSync(apiserver)) {
    missing.push(
      `kube-apiserver not found at ${apiserver}: run scripts/ensure-kube-apiserver.sh (builds it once, ~5-9 min)`,
    );
  } else if (!process.env.SNO_RELOCATE_KUBE_APISERVER) {
    const stamp = path.join(path.dirname(apiserver), 'kube-apiserver.recipe');
    const recipe = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : 'none';
    if (recipe !== KUBE_APISERVER_RECIPE) {
      missing.push(
        `kube-apiserver at ${apiserver} was built by an older recipe (${recipe}, want ${KUBE_APISERVER_RECIPE}): run scripts/ensure-kube-apiserver.sh to rebuild it`,
      );
    }
  }
  const etcd = etcdPath();
  if (!existsSync(etcd))
    missing.push(`etcd not found (${etcd}): run scripts/ensure-kube-apiserver.sh (installs etcd-server)`);
  return missing;
}

export interface TestUser {
  name: string;
  groups?: string[];
}

export interface StartClusterOptions {
  /** Folder for etcd data, certificates, logs and the kubeconfig; default a new temporary folder. */
  dir?: string;
  /** Keep the folder after stop() (also with env SNO_RELOCATE_KEEP_KUBE_DIR=1). */
  keepDir?: boolean;
  /** Bound for etcd and kube-apiserver to become ready, each; default 60 s. */
  readyTimeoutMs?: number;
  /** More static-token users (not in system:masters unless given that group), for RBAC tests. */
  users?: TestUser[];
  /** Extra kube-apiserver flags, e.g. ['--v=4']. */
  extraApiServerArgs?: string[];
  /**
   * Why this caller needs a server of its own rather than its worker's shared one (test/kube/pool.ts),
   * e.g. it stops the process by signal. Any of the options above also makes the server private.
   */
  private?: string;
  /** the test CRDs to install (test/kube/install.ts), before the server is handed out */
  crds?: ApplyCrdsOptions;
}

export interface RestartOptions {
  /** Signal that ends the running kube-apiserver; default SIGTERM (SIGKILL models a crash). */
  signal?: NodeJS.Signals;
  /** Wait this long with the API down before starting it again; default 0. */
  downMs?: number;
  /**
   * Flags added from this start on, as an operator rolling out a new kube-apiserver revision with
   * a changed configuration would (e.g. --client-ca-file).
   */
  extraArgs?: string[];
}

export interface TestCluster {
  /** A kubeconfig (context `sno-relocate-test`) for the admin user. */
  kubeconfigPath: string;
  /** https://127.0.0.1:PORT */
  server: string;
  /** The admin's bearer token (system:masters). */
  token: string;
  /** Tokens of the extra users, by name. */
  userTokens: Record<string, string>;
  /** The server's self-signed certificate chain (PEM), trusted by the kubeconfig. */
  caPath: string;
  /** The working folder (logs: etcd.log, kube-apiserver.log). */
  dir: string;
  /** http://127.0.0.1:PORT of etcd. */
  etcdEndpoint: string;
  /** A KubeConfig loaded from kubeconfigPath. */
  kubeConfig(): KubeConfig;
  /** Writes a kubeconfig for one of the extra users and returns its path. */
  kubeconfigFor(user: string): Promise<string>;
  /** The pids of the running processes (undefined while stopped). */
  pids(): { etcd?: number; apiServer?: number };
  /** Stops kube-apiserver only (the API is down until startApiServer()). */
  stopApiServer(signal?: NodeJS.Signals): Promise<void>;
  /** Starts kube-apiserver again on the same port against the same etcd and waits until ready. */
  startApiServer(): Promise<void>;
  /** stopApiServer() then startApiServer(): data in etcd survives. */
  restartApiServer(opts?: RestartOptions): Promise<void>;
  /** Stops kube-apiserver, then etcd, by pid, awaiting their exit; removes the folder. Idempotent. */
  stop(): Promise<void>;
}

/** Children still running, killed on process exit if a test forgot stop(). */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

interface Probe {
  status: number;
  body: string;
}

function probeHttp(url: string, opts: { token?: string; ca?: string } = {}): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.request(
      u,
      {
        method: 'GET',
        timeout: 2000,
        headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {},
        ...(u.protocol === 'https:' ? (opts.ca ? { ca: opts.ca } : { rejectUnauthorized: false }) : {}),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Polls until `ready` says yes, the process exits, or the time is up. Polls every 100 ms at first,
 * backing off to 500 ms; never sleeps a fixed time.
 */
async function waitReady(
  what: string,
  child: ChildProcess,
  logFile: string,
  timeoutMs: number,
  ready: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let delay = 100;
  let last = '';
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${what} exited (${child.exitCode ?? child.signalCode}) before it was ready; last lines of ${logFile}:\n${tail(logFile)}`,
      );
    }
    try {
      if (await ready()) return;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what} not ready after ${timeoutMs} ms (${last}); last lines of ${logFile}:\n${tail(logFile)}`);
    }
    await sleep(delay);
    delay = Math.min(500, Math.round(delay * 1.5));
  }
}

function startProcess(bin: string, args: string[], logFile: string): ChildProcess {
  const fd = openSync(logFile, 'a');
  try {
    // etcd reads ETCD_* variables as flags: keep the caller's out of it.
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('ETCD_') || k === 'ETCD_UNSUPPORTED_ARCH'),
    );
    const child = spawn(bin, args, { stdio: ['ignore', fd, fd], env });
    live.add(child);
    child.once('exit', () => live.delete(child));
    child.once('error', () => live.delete(child));
    return child;
  } finally {
    closeSync(fd);
  }
}

/** Sends `signal`, then SIGKILL after `graceMs`, and resolves when the process has exited. */
async function killAndWait(
  child: ChildProcess | undefined,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 10_000,
): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
    live.delete(child);
  }
}

function kubeconfigYaml(server: string, caPem: string, user: string, token: string): string {
  return yaml.dump({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'sno-relocate-test',
        cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'sno-relocate-test', context: { cluster: 'sno-relocate-test', user } }],
    'current-context': 'sno-relocate-test',
  });
}

/**
 * Starts etcd and kube-apiserver and resolves once /readyz answers 200; under vitest, hands out the
 * worker's shared server instead (test/kube/pool.ts) unless the options make the server private.
 * Throws (with the tail of the process log) when a binary is missing or a process fails to become
 * ready in time.
 */
export async function startCluster(opts: StartClusterOptions = {}): Promise<TestCluster> {
  const missing = missingBinaries();
  if (missing.length > 0) throw new Error(missing.join('\n'));
  // only in a vitest worker: a program a test starts (the demo) inherits the variable, not the pool
  const pool = '__vitest_worker__' in globalThis ? process.env[POOL_ENV] : undefined;
  const shareable = !opts.private && !opts.dir && !opts.keepDir && !opts.users?.length && !opts.extraApiServerArgs;
  if (pool && shareable && opts.readyTimeoutMs === undefined && !holdingPooledCluster())
    return acquirePooledCluster(pool, opts.crds);
  installExitHook();
  const apiServerBin = kubeApiServerPath();
  const etcdBin = etcdPath();
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const dir = opts.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'sno-relocate-kube-')));
  await mkdir(path.join(dir, 'certs'), { recursive: true });
  const keepDir = opts.keepDir || process.env.SNO_RELOCATE_KEEP_KUBE_DIR === '1';

  // Static tokens: the admin in system:masters, and any extra users.
  const token = randomBytes(24).toString('hex');
  const userTokens: Record<string, string> = {};
  const tokenLines = [`${token},admin,admin,system:masters`];
  for (const [i, u] of (opts.users ?? []).entries()) {
    const t = randomBytes(24).toString('hex');
    userTokens[u.name] = t;
    const groups = u.groups && u.groups.length > 0 ? `,"${u.groups.join(',')}"` : '';
    tokenLines.push(`${t},${u.name},uid-${i + 1}-${u.name}${groups}`);
  }
  await writeFile(path.join(dir, 'tokens.csv'), tokenLines.join('\n') + '\n', { mode: 0o600 });

  // Service-account token signing key pair (P-256: instant to make, accepted by v1.20).
  const sa = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  await writeFile(path.join(dir, 'sa.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  await writeFile(path.join(dir, 'sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));

  const etcdLog = path.join(dir, 'etcd.log');
  const apiLog = path.join(dir, 'kube-apiserver.log');
  let etcd: ChildProcess | undefined;
  let apiServer: ChildProcess | undefined;
  let etcdEndpoint = '';
  let apiPort = 0;
  let server = '';

  const cleanup = async (): Promise<void> => {
    await killAndWait(apiServer);
    await killAndWait(etcd);
    apiServer = undefined;
    etcd = undefined;
    if (!keepDir && !opts.dir) await rm(dir, { recursive: true, force: true });
  };

  const startEtcd = async (): Promise<void> => {
    // A port picked free can be taken by someone else before etcd binds it: retry with new ports.
    for (let attempt = 1; ; attempt++) {
      const clientPort = await freeTcpPort();
      const peerPort = await freeTcpPort();
      const client = `http://127.0.0.1:${clientPort}`;
      const peer = `http://127.0.0.1:${peerPort}`;
      etcd = startProcess(
        etcdBin,
        [
          '--name=test',
          `--data-dir=${path.join(dir, 'etcd')}`,
          `--listen-client-urls=${client}`,
          `--advertise-client-urls=${client}`,
          `--listen-peer-urls=${peer}`,
          `--initial-advertise-peer-urls=${peer}`,
          `--initial-cluster=test=${peer}`,
          '--log-level=warn',
          '--quota-backend-bytes=2147483648',
        ],
        etcdLog,
      );
      try {
        await waitReady('etcd', etcd, etcdLog, readyTimeoutMs, async () => {
          const r = await probeHttp(`${client}/health`);
          return r.status === 200 && r.body.includes('"true"');
        });
        etcdEndpoint = client;
        return;
      } catch (e) {
        await killAndWait(etcd, 'SIGKILL');
        if (attempt >= 3 || !/address already in use/.test(tail(etcdLog, 10))) throw e;
      }
    }
  };

  let rolledOutArgs: string[] = [];
  const apiArgs = (): string[] => [
    `--etcd-servers=${etcdEndpoint}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    '--insecure-port=0',
    `--cert-dir=${path.join(dir, 'certs')}`,
    `--token-auth-file=${path.join(dir, 'tokens.csv')}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${path.join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--disable-admission-plugins=ServiceAccount',
    '--profiling=false',
    ...(opts.extraApiServerArgs ?? []),
    ...rolledOutArgs,
  ];

  const startApiServer = async (): Promise<void> => {
    if (apiServer && apiServer.exitCode === null && apiServer.signalCode === null)
      throw new Error('kube-apiserver is already running');
    apiServer = startProcess(apiServerBin, apiArgs(), apiLog);
    await waitReady('kube-apiserver', apiServer, apiLog, readyTimeoutMs, async () => {
      const r = await probeHttp(`${server}/readyz`, { token });
      return r.status === 200;
    });
  };

  try {
    await startEtcd();
    for (let attempt = 1; ; attempt++) {
      apiPort = await freeTcpPort();
      server = `https://127.0.0.1:${apiPort}`;
      try {
        await startApiServer();
        break;
      } catch (e) {
        await killAndWait(apiServer, 'SIGKILL');
        if (attempt >= 3 || !/address already in use/.test(tail(apiLog, 10))) throw e;
      }
    }
  } catch (e) {
    await cleanup();
    throw e;
  }

  // The server made a CA and a serving certificate signed by it (for 127.0.0.1, localhost, ...);
  // apiserver.crt holds both. Trust that chain, so TLS is verified for real.
  const caPath = path.join(dir, 'certs', 'apiserver.crt');
  const caPem = await readFile(caPath, 'utf8');
  const kubeconfigPath = path.join(dir, 'kubeconfig');
  await writeFile(kubeconfigPath, kubeconfigYaml(server, caPem, 'admin', token), { mode: 0o600 });

  let stopped = false;
  const stopApiServer = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    await killAndWait(apiServer, signal);
    apiServer = undefined;
  };

  const cluster: TestCluster = {
    kubeconfigPath,
    server,
    token,
    userTokens,
    caPath,
    dir,
    etcdEndpoint,
    kubeConfig() {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath);
      return kc;
    },
    async kubeconfigFor(user: string) {
      const t = userTokens[user];
      if (!t) throw new Error(`no test user ${user}`);
      const p = path.join(dir, `kubeconfig-${user}`);
      await writeFile(p, kubeconfigYaml(server, caPem, user, t), { mode: 0o600 });
      return p;
    },
    pids() {
      return { etcd: etcd?.pid, apiServer: apiServer?.pid };
    },
    stopApiServer,
    startApiServer,
    async restartApiServer(r: RestartOptions = {}) {
      if (stopped) throw new Error('cluster is stopped');
      await stopApiServer(r.signal ?? 'SIGTERM');
      if (r.extraArgs) rolledOutArgs = r.extraArgs;
      if (r.downMs) await sleep(r.downMs);
      await startApiServer();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await cleanup();
    },
  };
  if (opts.crds) {
    try {
      await applyCrds(kubeconfigPath, opts.crds);
    } catch (e) {
      await cluster.stop();
      throw e;
    }
  }
  return cluster;
}
