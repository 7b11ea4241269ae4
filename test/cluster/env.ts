/**
 * What the cluster step tests share: a real kube-apiserver with the test CRDs and a seeded factory
 * cluster, and step contexts connected to it through the real Kube adapter, over a temporary root.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { Site } from '../../src/config/site.js';
import { planSteps, runSteps } from '../../src/engine/engine.js';
import { createBanner } from '../../src/engine/banner.js';
import { StateStore } from '../../src/engine/state.js';
import type { RunOptions, StepName } from '../../src/engine/step.js';
import type { StepContext } from '../../src/steps/step.js';
import { connectKube, type KubeClientOptions } from '../../src/kube/client.js';
import { createLogger, type Logger } from '../../src/log/logger.js';
import { KUBELET_ENV_FILE } from '../../src/node/node-name.js';
import { systemClock } from '../../src/ports/clock.js';
import { createExec } from '../../src/ports/exec.js';
import { createRootFs } from '../../src/ports/fs.js';
import type { Kube } from '../../src/ports/kube.js';
import { STEPS } from '../../src/steps/index.js';
import { startCluster, type TestCluster, type TestUser } from '../kube/cluster.js';
import {
  FACTORY_NODE_IP,
  FACTORY_NODE_NAME,
  seedFactoryCluster,
  type FactoryCluster,
  type SeedOptions,
} from '../kube/factory-cluster.js';
import type { ApplyCrdsOptions } from '../kube/install.js';
import { serveRoutesByAggregation, type AggregatedRoutes } from '../kube/aggregated-routes.js';
import { startModels, type ModelOptions, type Models } from './models/index.js';
import { startRouterDataPlane } from './models/router-data-plane.js';
import { testSite } from '../node/context.js';
import { startDnsmasq } from '../helpers/dnsmasq.js';
import { noteLogLine } from '../helpers/error-log.js';

export const STATE_DIR = '/var/lib/sno-relocate';
/**
 * The models' rollouts take their upstream durations (models/durations.ts) times this, in every
 * cluster test: SNO_RELOCATE_ROLLOUT_TIME_FACTOR, else 1/20 (docs/testing.md).
 */
export const ROLLOUT_TIME_FACTOR = Number(process.env.SNO_RELOCATE_ROLLOUT_TIME_FACTOR || 0.05);
/** the cluster steps the agent runs before health (which is another step's business) */
export const CLUSTER_PHASE: StepName[] = STEPS.filter((s) => s.group === 'cluster' && s.name !== 'health').map(
  (s) => s.name,
);

export interface ClusterEnv {
  cluster: TestCluster;
  factory: FactoryCluster;
  /** the OpenShift components' models (test/cluster/models), unless started without */
  models?: Models;
  /** the aggregated server that serves route.openshift.io, when started with `aggregatedRoutes` */
  routes?: AggregatedRoutes;
  stop(): Promise<void>;
}

export interface FactoryOptions {
  crds?: ApplyCrdsOptions;
  seed?: SeedOptions;
  /** run the models of the OpenShift operators, router and kube-apiserver revisions; default true */
  models?: boolean;
  /** how the models time their rollouts (test/cluster/models/index.ts); timeFactor defaults to ROLLOUT_TIME_FACTOR */
  modelOptions?: Omit<ModelOptions, 'nodeName' | 'routes' | 'timeFactor'> & { timeFactor?: number };
  /** how long the models may take to settle the seeded cluster (the router admits each route in turn) */
  settleTimeoutMs?: number;
  /** more static-token users of the API server, for RBAC tests (they make the server private) */
  users?: TestUser[];
  /** why the file needs an API server of its own rather than the shared one (test/kube/pool.ts) */
  private?: string;
  /**
   * serve route.openshift.io through an APIService backed by the tests' aggregated server, as
   * OpenShift does, instead of a CRD (test/kube/aggregated-routes.ts); default false
   */
  aggregatedRoutes?: boolean;
  /**
   * the router answers on `address`:443 and the cluster DNS forwards to `nameservers`: the console
   * and authentication operators' models check their routes' health (models/route-health.ts). By
   * default a cluster DNS of the file's own (a real dnsmasq) answers every name with the router's
   * address. false: the operators turn Available as soon as their routes are admitted, and the
   * caller says why it needs that.
   */
  routeHealth?: { address: string; nameservers: string[] } | false;
}

/**
 * A loopback /24 of this cluster's own: the router's data plane on .1:443, and on .2:53 a cluster
 * DNS that resolves every name to it, as a site's DNS resolves its API and apps names to the node.
 */
async function wildcardClusterDns(): Promise<{ address: string; nameservers: string[]; stop(): Promise<void> }> {
  const net = `127.${20 + Math.floor(Math.random() * 200)}.${Math.floor(Math.random() * 250)}`;
  const dir = mkdtempSync(path.join(tmpdir(), 'cluster-dns-'));
  writeFileSync(path.join(dir, 'all.conf'), `address=/#/${net}.1\n`);
  const dns = await startDnsmasq(dir, `${net}.2`);
  return { address: `${net}.1`, nameservers: [`${net}.2`], stop: () => dns.stop() };
}

/** The test's own restarts and the kube-apiserver model's, one at a time, as one static pod restarts. */
function serializeRestarts(cluster: TestCluster): void {
  const restart = cluster.restartApiServer.bind(cluster);
  let last: Promise<void> = Promise.resolve();
  cluster.restartApiServer = (o) => {
    const next = last.then(
      () => restart(o),
      () => restart(o),
    );
    last = next;
    return next;
  };
}

export async function startFactory(opts: FactoryOptions = {}): Promise<ClusterEnv> {
  const crds = opts.aggregatedRoutes
    ? { ...opts.crds, except: [...(opts.crds?.except ?? []), 'routes.route.openshift.io'] }
    : (opts.crds ?? {});
  const cluster = await startCluster({
    crds,
    ...(opts.users && { users: opts.users }),
    ...(opts.private && { private: opts.private }),
  });
  serializeRestarts(cluster);
  let models: Models | undefined;
  let routes: AggregatedRoutes | undefined;
  let clusterDns: Awaited<ReturnType<typeof wildcardClusterDns>> | undefined;
  const stop = async () => {
    await models?.stop();
    await clusterDns?.stop();
    await routes?.close();
    await cluster.stop();
  };
  try {
    if (opts.aggregatedRoutes) routes = await serveRoutesByAggregation(cluster, cluster.kubeConfig());
    const factory = await seedFactoryCluster(cluster.kubeconfigPath, opts.seed);
    if (opts.models !== false) {
      if (opts.routeHealth === undefined) clusterDns = await wildcardClusterDns();
      const health = opts.routeHealth === undefined ? clusterDns : opts.routeHealth;
      const routeHealth = health && {
        dataPlane: await startRouterDataPlane(cluster.kubeConfig(), health.address),
        network: { nameservers: health.nameservers },
      };
      models = startModels(cluster, cluster.kubeConfig(), {
        timeFactor: ROLLOUT_TIME_FACTOR,
        ...opts.modelOptions,
        nodeName: factory.nodeName,
        ...(routes && { routes }),
        ...(routeHealth && { routeHealth }),
      });
      await models.settled(opts.settleTimeoutMs);
    }
    return { cluster, factory, ...(models && { models }), ...(routes && { routes }), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The site the cluster tests relocate to: the factory node, keeping its name and internal IP. */
export function storeSite(parts: Partial<Site> = {}): Site {
  return testSite({
    name: 'store-0042',
    baseDomain: 'store42.example.com',
    hostname: FACTORY_NODE_NAME,
    network: { internalIP: `${FACTORY_NODE_IP}/24`, nmstate: { interfaces: [] } },
    pullSecret: {
      auths: {
        'registry.store42.example.com:5000': { auth: Buffer.from('store:store-secret-token').toString('base64') },
      },
    },
    imageDigestMirrors: [
      {
        source: 'quay.io/openshift-release-dev/ocp-release',
        mirrors: ['registry.store42.example.com:5000/ocp/release'],
      },
    ],
    imageTagMirrors: [{ source: 'registry.redhat.io/redhat', mirrors: ['registry.store42.example.com:5000/redhat'] }],
    ...parts,
  });
}

export interface Agent {
  ctx: StepContext;
  root: string;
  logs: string[];
  kube: Kube;
  plan(selected?: StepName[]): ReturnType<typeof planSteps>;
  run(selected?: StepName[]): ReturnType<typeof runSteps>;
}

/** A debug logger writing JSON lines into memory; `onLine` sees each line as it is written. */
export function memoryLogger(onLine?: (line: string) => void): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = createLogger({
    format: 'json',
    level: 'debug',
    journal: false,
    write: (line) => {
      lines.push(line);
      noteLogLine(line);
      onLine?.(line);
    },
  });
  return { log, lines };
}

/** A step context on a fresh temporary root (or the given one), connected to the test API. */
/** The node phase done under `root`: kubelet registers under the factory name node-name pinned. */
export function pinFactoryNodeName(root: string): void {
  const kubeletEnv = path.join(root, KUBELET_ENV_FILE);
  if (existsSync(kubeletEnv)) return;
  mkdirSync(path.dirname(kubeletEnv), { recursive: true });
  writeFileSync(kubeletEnv, `KUBELET_NODE_NAME=${FACTORY_NODE_NAME}\n`);
}

/** The installer's kubeadmin secret, made with the cluster: `hash` is its bcrypt hash of the password. */
export async function seedKubeadmin(env: ClusterEnv, hash: string): Promise<void> {
  await env.cluster
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespacedSecret({
      namespace: 'kube-system',
      body: { metadata: { name: 'kubeadmin' }, data: { kubeadmin: Buffer.from(hash).toString('base64') } },
    });
}

export async function agent(
  env: ClusterEnv,
  site: Site,
  root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-cluster-')),
  onLog?: (entry: LogEntry) => void,
  options: Partial<RunOptions> = {},
  kubeOptions: KubeClientOptions = {},
): Promise<Agent> {
  const { log, lines: logs } = memoryLogger((l) => onLog?.(JSON.parse(l) as LogEntry));
  pinFactoryNodeName(root);
  const fs = createRootFs(root);
  const kube = await connectKube(env.cluster.kubeconfigPath, log, { readyTimeoutMs: 30_000, ...kubeOptions });
  const ctx: StepContext = {
    site,
    fs,
    exec: createExec(log),
    systemd: () => Promise.reject(new Error('no systemd in cluster tests')),
    nmstate: {
      show: () => Promise.reject(new Error('no nmstate in cluster tests')),
    } as unknown as StepContext['nmstate'],
    kube: async () => kube,
    clock: systemClock,
    log,
    stateDir: STATE_DIR,
    configHash: 'test',
    options: { healthTimeoutSeconds: 120, healthStableSeconds: 1, ...options },
  };
  const store = new StateStore(fs, STATE_DIR);
  return {
    ctx,
    root,
    logs,
    kube,
    plan: (selected = CLUSTER_PHASE) => planSteps({ steps: STEPS, selected: new Set(selected), ctx }),
    run: (selected = CLUSTER_PHASE) =>
      runSteps({
        steps: STEPS,
        selected: new Set(selected),
        ctx,
        store,
        banner: createBanner(undefined),
        configHash: 'cluster-test',
      }),
  };
}

export interface LogEntry {
  level: number;
  msg: string;
  step?: string;
  event?: string;
}

/** Log lines at warn or above, parsed. */
export const problems = (logs: string[]) => logs.map((l) => JSON.parse(l) as LogEntry).filter((l) => l.level >= 40);
