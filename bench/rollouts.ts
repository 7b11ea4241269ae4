/**
 * What a whole relocation costs the control plane: the cluster phase and health of a site that
 * changes the domain, pull secret, mirrors, client CA, kubeadmin, proxy and trust bundle, run on a
 * freshly seeded factory cluster against the models of the components it rolls out
 * (test/cluster/models, ledger.ts). Prints each count next to the minimum the changes require
 * (docs/rollouts.md), the run's time against the models, and the wall time at a real site: each
 * rollout given its duration from src/kube/rollout-costs.ts (cited there), one after another.
 * Each duration is a parameter: ROLLOUT_SECONDS_KUBE_APISERVER, ..._OPENSHIFT_APISERVER,
 * ..._OAUTH_SERVER, ..._ROUTER, ..._REBOOT. Then, per release 4.14 to 4.18, whether the machine-config
 * daemon reboots for the pull secret and mirrors, and for the proxy and trust bundle.
 * Medians of BENCH_RUNS (default 3) runs.
 *
 *   npm run bench:rollouts          (needs scripts/ensure-kube-apiserver.sh once)
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import {
  ROLLOUT_COSTS,
  ROLLOUT_KINDS,
  totalSeconds,
  type RolloutCost,
  type RolloutKind,
} from '../src/kube/rollout-costs.js';
import { opensslCa } from '../test/helpers/openssl.js';
import { agent, CLUSTER_PHASE, startFactory, storeSite } from '../test/cluster/env.js';
import { actionFor, RELEASES } from '../test/cluster/models/machine-config-renders.js';
import { reportFigure } from './figures.js';
import { median } from './lib.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const costs = Object.fromEntries(
  ROLLOUT_KINDS.map((kind) => {
    const given = process.env[`ROLLOUT_SECONDS_${kind.toUpperCase().replace(/-/g, '_')}`];
    return [kind, { ...ROLLOUT_COSTS[kind], ...(given && { seconds: Number(given) }) }];
  }),
) as Record<RolloutKind, RolloutCost>;
/**
 * What the site's changes require at least, taken as the two batches the agent makes of them: the
 * domain's (one kube-apiserver revision, one openshift-apiserver rollout, the OAuth server for its
 * certificate and for its issuer, one router rollout, no reboot) and, last before the reboot, the
 * proxy's (a kube-apiserver revision, an openshift-apiserver and an OAuth server rollout, one reboot).
 */
const MINIMUM: Record<RolloutKind, number> = {
  'kube-apiserver': 2,
  'openshift-apiserver': 2,
  'oauth-server': 3,
  router: 1,
  reboot: 1,
};
/**
 * The models' rollouts at 1/20 of the durations above, so that what overlaps at a site overlaps in
 * the run: the kube-apiserver's installer 60 s, the openshift-apiserver's 50 s shutdown delay, the
 * OAuth server's 25 s preStop, the router's new pod a minute.
 */
const MODEL_TIMES = {
  installerMs: 3000,
  times: {
    openshiftApiServer: { shutdownMs: 2500, startMs: 1500 },
    oauthServer: { shutdownMs: 1250, startMs: 1000 },
    router: { shutdownMs: 0, startMs: 3000 },
  },
};

const work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-bench-rollouts-'));
const clientCa = readFileSync(opensslCa(work, 'store42-admins').crt, 'utf8');
const bundle = readFileSync(opensslCa(work, 'store42-proxy-ca').crt, 'utf8');
const proxyUrl = 'http://proxy.store42.example.com:3128';
const site = storeSite({
  access: { clientCaPem: clientCa, kubeadminPasswordHash: `$2b$12$${'K'.repeat(53)}` },
  proxy: { httpProxy: proxyUrl, httpsProxy: proxyUrl, noProxy: '.store42.example.com' },
  trustBundle: { caBundlePem: bundle, proxyTrustedCA: true },
});

interface Run {
  counts: Record<RolloutKind, number>;
  revisionsMade: number;
  seconds: number;
}

async function once(): Promise<Run> {
  const env = await startFactory({ modelOptions: MODEL_TIMES });
  try {
    await env.cluster
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespacedSecret({
        namespace: 'kube-system',
        body: { metadata: { name: 'kubeadmin' }, data: { kubeadmin: Buffer.from('factory').toString('base64') } },
      });
    const a = await agent(env, site, undefined, undefined, { healthTimeoutSeconds: 300 });
    const from = env.models!.ledger.entries.length;
    const started = performance.now();
    const state = await a.run([...CLUSTER_PHASE, 'health']);
    const seconds = (performance.now() - started) / 1000;
    if (state.result !== 'succeeded') throw new Error(`run ${state.result}: ${state.message ?? ''}`);
    await env.models!.settled();
    const ledger = env.models!.ledger;
    return {
      counts: Object.fromEntries(ROLLOUT_KINDS.map((k) => [k, ledger.count(k, from)])) as Record<RolloutKind, number>,
      revisionsMade: ledger.count('kube-apiserver-revision', from),
      seconds,
    };
  } finally {
    await env.stop();
  }
}

const runs: Run[] = [];
for (let i = 0; i < RUNS; i++) runs.push(await once());
const counts = Object.fromEntries(ROLLOUT_KINDS.map((k) => [k, median(runs.map((r) => r.counts[k]))])) as Record<
  RolloutKind,
  number
>;
const rollouts = ROLLOUT_KINDS.flatMap((k) => Array<RolloutKind>(counts[k]).fill(k));
const wall = totalSeconds(rollouts, costs);
const minimumWall = totalSeconds(
  ROLLOUT_KINDS.flatMap((k) => Array<RolloutKind>(MINIMUM[k]).fill(k)),
  costs,
);
const againstModels = median(runs.map((r) => r.seconds));

console.log(
  `\nA whole relocation (domain, pull secret, mirrors, client CA, kubeadmin, proxy, trust bundle), ${RUNS} runs`,
);
console.log('rollout                 count  minimum  each (s)  source');
for (const k of ROLLOUT_KINDS)
  console.log(
    `${k.padEnd(24)}${String(counts[k]).padStart(5)}  ${String(MINIMUM[k]).padStart(7)}  ${String(costs[k].seconds).padStart(8)}  ${costs[k].source}`,
  );
console.log(
  `kube-apiserver revisions made: ${median(runs.map((r) => r.revisionsMade))} (a revision replaced before its installer is done restarts nothing)`,
);
console.log(`run against the models: ${againstModels.toFixed(1)} s`);
console.log(
  `wall time at a site, the rollouts one after another: ${(wall / 60).toFixed(1)} min (minimum ${(minimumWall / 60).toFixed(1)} min)`,
);
console.log('\nmachine-config daemon, per release: does it reboot?');
for (const r of RELEASES)
  console.log(
    `${r}: pull secret + mirrors ${actionFor(r, ['/var/lib/kubelet/config.json', '/etc/containers/registries.conf']).reboot ? 'reboot' : 'no reboot'}; proxy + trust bundle ${actionFor(r, ['/etc/mco/proxy.env', '/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt']).reboot ? 'one reboot' : 'no reboot'}`,
  );

const over = ROLLOUT_KINDS.filter((k) => counts[k] > MINIMUM[k]);
reportFigure({
  what: 'control-plane rollouts of a whole relocation (domain, pull secret, mirrors, client CA, kubeadmin, proxy, trust)',
  target: 'each at the minimum the changes require',
  measured: `${ROLLOUT_KINDS.map((k) => `${counts[k]} ${k}`).join(', ')}${over.length ? ` (over: ${over.join(', ')})` : ''}`,
  baseline: `minimum: ${ROLLOUT_KINDS.map((k) => `${MINIMUM[k]} ${k}`).join(', ')}`,
});
reportFigure({
  what: 'wall time of those rollouts at a site (durations cited in src/kube/rollout-costs.ts)',
  target: '< 20 min (the enhancement)',
  measured: `${(wall / 60).toFixed(1)} min; the run against the models ${againstModels.toFixed(1)} s`,
  baseline: `the minimum counts: ${(minimumWall / 60).toFixed(1)} min`,
});
