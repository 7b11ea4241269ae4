/**
 * What the models' rollouts cost: every kube-apiserver revision made and installed, every
 * openshift-apiserver, OAuth server and router rollout, every render of the master pool and every
 * reboot it asks for, in the order they happened. The tests and bench/rollouts read the counts.
 */
import type { RolloutKind } from '../../../src/kube/rollout-costs.js';

export type LedgerKind =
  /** a restart of the kube-apiserver's static pod on a new revision (an API outage) */
  | RolloutKind
  /** a revision made: one that a newer revision pre-empts before its installer is done never restarts anything */
  | 'kube-apiserver-revision'
  /** a revision whose kube-apiserver did not start, replaced by the last known good one */
  | 'kube-apiserver-fallback'
  /** a rendered MachineConfig of the master pool */
  | 'render';

export interface LedgerEntry {
  kind: LedgerKind;
  /** what caused it, as the component would say */
  reason: string;
  at: number;
}

export class Ledger {
  readonly entries: LedgerEntry[] = [];

  record(kind: LedgerKind, reason: string): void {
    this.entries.push({ kind, reason, at: Date.now() });
  }

  /** how many of `kind` since entry `from` (a length read earlier) */
  count(kind: LedgerKind, from = 0): number {
    return this.entries.slice(from).filter((e) => e.kind === kind).length;
  }

  /** the entries since `from` on one line, each as `+ms kind: reason` from the first, for a test's failure message */
  since(from = 0): string {
    const start = this.entries[from]?.at ?? 0;
    return this.entries
      .slice(from)
      .map((e) => `+${e.at - start}ms ${e.kind}: ${e.reason}`)
      .join('; ');
  }
}
