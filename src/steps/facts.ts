/**
 * What a step's apply hands on, every kind in one place. The engine gives a step's facts to its
 * verification (survey and verify, as `after`) and records them in the run's state (state.json,
 * the step's `facts`), so what apply did is on record. Plain JSON, never a secret.
 *
 * A later step reads an earlier one's through `factOf`, from the run's state; admission's facts
 * are given to every step before the first.
 *
 * What steps hand each other across runs lies in the state folder, each file with its reader:
 * - shipment.json (node/shipment.ts): factory seal -> clock
 * - node-rename.json (node/rename.ts): node-rename -> csr-approval, node-identity
 * - kubelet-gate (node/kubelet-gate.ts): kubelet -> the kubelet unit's drop-in
 * - site-ca/ (certs/site-certs.ts): domain -> access, the node's served names
 * - previous-apps-domains.json (kube/openshift.ts): domain -> routes
 * - watch-context.json (watch/context.ts): health, cluster-pull-secret (the registries it drops) -> the watcher
 */
import type { Finding } from '../base/findings.js';
import type { TimeMark } from '../base/true-time.js';
import type { StepContext } from './step.js';

export interface StepFacts {
  /**
   * what admission left to the clock step, given before the first step (in `plan` too): its
   * deferred findings of time and the lower bounds of the time it knows
   */
  admission: { deferred: Finding[]; timeMarks: TimeMark[] };
  /**
   * the newest resourceVersion of the routes it patched: the verification lists routes from a
   * watch cache at least that new; null when one was not a number (the list then reads etcd)
   */
  routes: { patchedUpTo: string | null };
  /** the bounded wait for chronyd is over in this run: the verification judges the clock as it is */
  clock: { waited: true };
  /**
   * the run (its start, ISO 8601) in which the site's workloads stayed ready through health's whole
   * stability window: in-service need not watch a second window after it in that run
   */
  health: { workloadsHeldInRun: string };
}

/** What `step` recorded in this run's state (or admission gave), for a later step; undefined when none. */
export const factOf = <K extends keyof StepFacts>(ctx: Pick<StepContext, 'facts'>, step: K): StepFacts[K] | undefined =>
  ctx.facts?.[step] as StepFacts[K] | undefined;
