/**
 * What a whole relocation costs the control plane: the cluster phase and health of a site that
 * changes the domain, pull secret, mirrors, client CA, kubeadmin, proxy and trust bundle, run on a
 * freshly seeded factory cluster against the models of the components it rolls out
 * (test/cluster/models, ledger.ts). Prints each count next to the minimum the changes require,
 * derived from the table of which write rolls out what (bench/rollouts-table.ts, docs/rollouts.md),
 * the run's time against the models, and the wall time at a real site: each
 * rollout given its duration from src/kube/rollout-costs.ts (cited there), one after another.
 * Each duration is a parameter: ROLLOUT_SECONDS_KUBE_APISERVER, ..._OPENSHIFT_APISERVER,
 * ..._OAUTH_SERVER, ..._ROUTER, ..._REBOOT. Then, per release 4.14 to 4.18, whether the machine-config
 * daemon reboots for the pull secret and mirrors, and for the proxy and trust bundle.
 * Medians of BENCH_RUNS (default and least 5) runs, with their minimum and maximum.
 *
 *   npm run bench:rollouts          (needs scripts/ensure-kube-apiserver.sh once)
 */
import {
  ROLLOUT_COSTS,
  ROLLOUT_KINDS,
  totalSeconds,
  type RolloutCost,
  type RolloutKind,
} from '../src/kube/rollout-costs.js';
import { CLUSTER_PHASE } from '../test/cluster/env.js';
import { actionFor, RELEASES } from '../test/cluster/models/machine-config-renders.js';
import { reportFigure } from './figures.js';
import { median } from './lib.js';
import { relocateWholeSite, WHOLE_SITE_WRITES, type RelocationRollouts } from './rollouts-relocation.js';
import { minimumRollouts } from './rollouts-table.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
if (!(RUNS >= 5)) throw new Error(`BENCH_RUNS=${process.env.BENCH_RUNS}: a median needs at least 5 runs`);
const costs = Object.fromEntries(
  ROLLOUT_KINDS.map((kind) => {
    const given = process.env[`ROLLOUT_SECONDS_${kind.toUpperCase().replace(/-/g, '_')}`];
    return [kind, { ...ROLLOUT_COSTS[kind], ...(given && { seconds: Number(given) }) }];
  }),
) as Record<RolloutKind, RolloutCost>;
/** what the site's writes cost at least, from the table of which write rolls out what */
const MINIMUM = minimumRollouts(WHOLE_SITE_WRITES, ROLLOUT_KINDS);
/**
 * The models' rollouts at 1/20 of upstream's durations (test/cluster/models/durations.ts), so that
 * what overlaps at a site overlaps in the run: the kube-apiserver's installer 30 s, the
 * openshift-apiserver's 50 s shutdown delay, the OAuth server's 25 s preStop, the router's new pod a minute.
 */
const TIME_FACTOR = 0.05;

const runs: RelocationRollouts[] = [];
for (let i = 0; i < RUNS; i++) runs.push(await relocateWholeSite(TIME_FACTOR, [...CLUSTER_PHASE, 'health']));
/** median (min-max) of a figure over the runs */
const spread = (values: number[], digits = 0) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)})`;
const counts = Object.fromEntries(ROLLOUT_KINDS.map((k) => [k, median(runs.map((r) => r.counts[k]))])) as Record<
  RolloutKind,
  number
>;
const rollouts = ROLLOUT_KINDS.flatMap((k) => Array<RolloutKind>(Math.round(counts[k])).fill(k));
const wall = totalSeconds(rollouts, costs);
const minimumWall = totalSeconds(
  ROLLOUT_KINDS.flatMap((k) => Array<RolloutKind>(MINIMUM[k]).fill(k)),
  costs,
);
const againstModels = spread(
  runs.map((r) => r.seconds),
  1,
);

console.log(
  `\nA whole relocation (domain, pull secret, mirrors, client CA, kubeadmin, proxy, trust bundle), ${RUNS} runs`,
);
console.log('rollout                 count (min-max)  minimum  each (s)  source');
for (const k of ROLLOUT_KINDS)
  console.log(
    `${k.padEnd(24)}${spread(runs.map((r) => r.counts[k])).padStart(15)}  ${String(MINIMUM[k]).padStart(7)}  ${String(costs[k].seconds).padStart(8)}  ${costs[k].source}`,
  );
console.log(
  `kube-apiserver revisions made: ${spread(runs.map((r) => r.revisionsMade))} (a revision replaced before its installer is done restarts nothing)`,
);
console.log(`run against the models: ${againstModels} s`);
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
  measured: `medians of ${RUNS} runs (min-max): ${ROLLOUT_KINDS.map((k) => `${spread(runs.map((r) => r.counts[k]))} ${k}`).join(', ')}${over.length ? ` (over: ${over.join(', ')})` : ''}`,
  baseline: `minimum from the table of which write rolls out what: ${ROLLOUT_KINDS.map((k) => `${MINIMUM[k]} ${k}`).join(', ')}`,
});
reportFigure({
  what: 'wall time of those rollouts at a site (durations cited in src/kube/rollout-costs.ts)',
  target: '< 20 min (the enhancement)',
  measured: `${(wall / 60).toFixed(1)} min; the run against the models ${againstModels} s`,
  baseline: `the minimum counts: ${(minimumWall / 60).toFixed(1)} min`,
});
