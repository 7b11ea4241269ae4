/**
 * What a step's apply hands on, every kind in one place. The engine gives a step's facts to its
 * verification (survey and verify, as `after`) and records them in the run's state (state.json,
 * the step's `facts`), so what apply did is on record. Plain JSON, never a secret.
 *
 * What steps hand each other across runs lies in the state folder, each file with its reader:
 * - shipment.json (node/shipment.ts): factory seal -> clock
 * - node-rename.json (node/rename.ts): node-rename -> csr-approval, node-identity
 * - kubelet-gate (node/kubelet-gate.ts): kubelet -> the kubelet unit's drop-in
 * - site-ca/ (certs/site-certs.ts): domain -> access, the node's served names
 * - previous-apps-domains.json (kube/openshift.ts): domain -> routes
 * - watch-context.json (watch/context.ts): health -> the watcher
 */
export interface StepFacts {
  /**
   * the newest resourceVersion of the routes it patched: the verification lists routes from a
   * watch cache at least that new; null when one was not a number (the list then reads etcd)
   */
  routes: { patchedUpTo: string | null };
  /** the bounded wait for chronyd is over in this run: the verification judges the clock as it is */
  clock: { waited: true };
}
