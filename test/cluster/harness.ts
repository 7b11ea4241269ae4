/**
 * The cluster steps against the real test API: a seeded factory cluster, a step context whose
 * kube() is the agent's own client, and the real engine to run the steps with.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createBanner } from '../../src/engine/banner.js';
import { runSteps } from '../../src/engine/engine.js';
import { StateStore } from '../../src/engine/state.js';
import { CLUSTER_STEPS, type StepContext, type StepName } from '../../src/engine/step.js';
import type { Site } from '../../src/config/site.js';
import { createLogger } from '../../src/log/logger.js';
import { connectKube } from '../../src/ports/adapters.js';
import { systemClock, type Clock } from '../../src/ports/clock.js';
import { createExec } from '../../src/ports/exec.js';
import { createRootFs } from '../../src/ports/fs.js';
import type { Kube } from '../../src/ports/kube.js';
import type { Nmstate } from '../../src/ports/nmstate.js';
import { STEPS } from '../../src/steps/index.js';
import { missingBinaries, startCluster, type TestCluster } from '../kube/cluster.js';
import { seedFactoryCluster, FACTORY_NODE_IP, type FactoryCluster, type SeedOptions } from '../kube/factory-cluster.js';
import { applyCrds } from '../kube/install.js';
import { testSite } from '../node/context.js';

export const STATE_DIR = '/var/lib/sno-relocate';
/** The name kubelet registers under at the site; the seeded CSRs are this node's. */
export const SITE_HOSTNAME = 'sno-store42';
/** every cluster step but health, which is not this suite's */
export const CLUSTER_PHASE: StepName[] = CLUSTER_STEPS.filter((s) => s !== 'health');

export const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';

export function clusterSite(parts: Partial<Site> = {}): Site {
  return testSite({
    name: 'store-0042',
    baseDomain: 'store42.example.com',
    hostname: SITE_HOSTNAME,
    network: { internalIP: `${FACTORY_NODE_IP}/24`, nmstate: { interfaces: [{ name: 'ens4', type: 'ethernet', state: 'up', ipv4: { enabled: true, address: [{ ip: '10.42.0.5', 'prefix-length': 24 }] } }] } },
    pullSecret: { auths: { 'registry.store42.example.com:5000': { auth: Buffer.from('store42:site-registry-token').toString('base64') } } },
    imageDigestMirrors: [{ source: 'quay.io/openshift-release-dev/ocp-release', mirrors: ['registry.store42.example.com:5000/ocp/release'] }],
    imageTagMirrors: [{ source: 'registry.redhat.io/redhat', mirrors: ['registry.store42.example.com:5000/redhat'] }],
    ...parts,
  });
}

const refuse = () => Promise.reject(new Error('cluster steps do not change the network'));
const noNetwork: Nmstate = { show: refuse, apply: refuse, commit: refuse, rollback: refuse };

export interface Agent {
  root: string;
  ctx: StepContext;
  /** JSON log lines written so far */
  logs: string[];
  run(selected?: Iterable<StepName>): ReturnType<typeof runSteps>;
  close(): void;
}

/** An agent on a fresh root (or the given one, to model the next boot) talking to `kubeconfigPath`. */
export function agentFor(kubeconfigPath: string, site: Site, options: { root?: string; clock?: Clock; onLog?: (entry: { step?: string; msg: string }) => void } = {}): Agent {
  const root = options.root ?? mkdtempSync(path.join(tmpdir(), 'cluster-steps-'));
  const logs: string[] = [];
  const write = (line: string) => {
    logs.push(line);
    options.onLog?.(JSON.parse(line) as { step?: string; msg: string });
  };
  const log = createLogger({ format: 'json', level: 'debug', journal: false, write });
  let kube: Promise<Kube> | undefined;
  const ctx: StepContext = {
    site,
    fs: createRootFs(root),
    exec: createExec(log),
    systemd: () => Promise.reject(new Error('cluster steps do not use systemd')),
    nmstate: noNetwork,
    kube: () => (kube ??= connectKube(kubeconfigPath, log)),
    clock: options.clock ?? systemClock,
    log,
    stateDir: STATE_DIR,
    options: { healthTimeoutSeconds: 1 },
  };
  const store = new StateStore(ctx.fs, STATE_DIR);
  return {
    root,
    ctx,
    logs,
    run: (selected = CLUSTER_PHASE) => runSteps({ steps: STEPS, selected: new Set(selected), ctx, store, banner: createBanner(undefined), configHash: 'cluster-test' }),
    close: () => {
      if (!options.root) rmSync(root, { recursive: true, force: true });
    },
  };
}

export interface Factory {
  cluster: TestCluster;
  seeded: FactoryCluster;
  stop(): Promise<void>;
}

/** A test API with the OpenShift CRDs (all, or all but `except`) and the seeded factory cluster. */
export async function startFactory(options: { except?: string[]; seed?: SeedOptions } = {}): Promise<Factory> {
  const missing = missingBinaries();
  if (missing.length > 0) throw new Error(`${missing.join('\n')}\n(set SNO_RELOCATE_SKIP_KUBE=1 to skip these tests instead)`);
  const cluster = await startCluster();
  try {
    await applyCrds(cluster.kubeconfigPath, options.except ? { except: options.except } : {});
    const seeded = await seedFactoryCluster(cluster.kubeconfigPath, { nodeName: SITE_HOSTNAME, ...options.seed });
    return { cluster, seeded, stop: () => cluster.stop() };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

/** Log lines at warn or above, parsed. */
export const problems = (logs: readonly string[]) => logs.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 40);

export const openssl = (args: string[], input?: string): string => execFileSync('openssl', args, { encoding: 'utf8', ...(input !== undefined && { input }), stdio: ['pipe', 'pipe', 'pipe'] });
