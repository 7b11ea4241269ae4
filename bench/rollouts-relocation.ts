/**
 * A whole relocation as bench/rollouts runs it and test/cluster/rollout-order.test.ts pins it: on a
 * freshly seeded factory cluster with the models, one run of the cluster phase for a site that
 * changes the domain, pull secret, mirrors, client CA, kubeadmin, proxy and trust bundle, and the
 * rollouts the models counted (test/cluster/models/ledger.ts).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROLLOUT_KINDS, type RolloutKind } from '../src/kube/rollout-costs.js';
import type { StepName } from '../src/engine/step.js';
import { opensslCa } from '../test/helpers/openssl.js';
import { agent, CLUSTER_PHASE, seedKubeadmin, startFactory, storeSite, type ClusterEnv } from '../test/cluster/env.js';
import { DOMAIN_WRITES, type Write } from './rollouts-table.js';

/** what the whole site writes (bench/rollouts-table.ts) */
export const WHOLE_SITE_WRITES: readonly Write[] = [
  ...DOMAIN_WRITES,
  'pullSecretMirrors',
  'clientCA',
  'trustBundle',
  'proxy',
];

export interface RelocationRollouts {
  counts: Record<RolloutKind, number>;
  revisionsMade: number;
  /** the run's seconds against the models */
  seconds: number;
  /** the models' ledger of the run, for a failure message */
  ledger: string;
}

export function wholeSite(work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-whole-site-'))) {
  const proxyUrl = 'http://proxy.store42.example.com:3128';
  return storeSite({
    access: {
      clientCaPem: readFileSync(opensslCa(work, 'store42-admins').crt, 'utf8'),
      kubeadminPasswordHash: `$2b$12$${'K'.repeat(53)}`,
    },
    proxy: { httpProxy: proxyUrl, httpsProxy: proxyUrl, noProxy: '.store42.example.com' },
    trustBundle: { caBundlePem: readFileSync(opensslCa(work, 'store42-proxy-ca').crt, 'utf8'), proxyTrustedCA: true },
  });
}

/**
 * Starts the factory cluster with the models at `timeFactor` of upstream's durations, relocates the
 * whole site (`steps`), waits for the models to settle and counts; `inspect` reads the cluster then.
 */
export async function relocateWholeSite(
  timeFactor: number,
  steps: StepName[] = CLUSTER_PHASE,
  inspect?: (env: ClusterEnv) => Promise<void>,
): Promise<RelocationRollouts> {
  // the site's proxy does not exist here: the operators' route checks through it would keep
  // console and authentication unavailable, as they would at a site whose proxy is down
  const env: ClusterEnv = await startFactory({ modelOptions: { timeFactor }, routeHealth: false });
  try {
    await seedKubeadmin(env, 'factory');
    const a = await agent(env, wholeSite(), undefined, undefined, { healthTimeoutSeconds: 300 });
    const ledger = env.models!.ledger;
    const from = ledger.entries.length;
    const started = performance.now();
    const state = await a.run(steps);
    const seconds = (performance.now() - started) / 1000;
    if (state.result !== 'succeeded') throw new Error(`run ${state.result}: ${state.message ?? ''}`);
    await env.models!.settled();
    await inspect?.(env);
    return {
      counts: Object.fromEntries(ROLLOUT_KINDS.map((k) => [k, ledger.count(k, from)])) as Record<RolloutKind, number>,
      revisionsMade: ledger.count('kube-apiserver-revision', from),
      seconds,
      ledger: ledger.since(from),
    };
  } finally {
    await env.stop();
  }
}
