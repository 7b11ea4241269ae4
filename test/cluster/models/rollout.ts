/**
 * A one-replica Deployment on one node that cannot surge (maxSurge 0, or required anti-affinity per
 * node): a new pod template stops the old pod first, then starts the new one, so each rollout is an
 * outage of the component. A template that changes again before the new pod is ready is taken into
 * the same outage: the Deployment controller scales the unready ReplicaSet down and starts the newest
 * (kubernetes pkg/controller/deployment/rolling.go, reconcileOldReplicaSets), and the outage starts over.
 */
import type { Ledger } from './ledger.js';
import type { RolloutKind } from '../../../src/kube/rollout-costs.js';

export interface RolloutTimes {
  /** the old pod's shutdown: it still serves, with its old configuration */
  shutdownMs: number;
  /** from the old pod gone to the new one ready: nothing serves */
  startMs: number;
}

export type Phase = 'serving' | 'old pod shutting down' | 'no pod';

export class SingleReplicaRollout {
  /** the template the running pod was made from; undefined before the first pass */
  private running: string | undefined;
  private target: string | undefined;
  private oldGoneAt = 0;
  private readyAt = 0;

  constructor(
    private readonly kind: RolloutKind,
    private readonly times: RolloutTimes,
    private readonly ledger?: Ledger,
  ) {}

  /** Tells the wanted template (a digest of its inputs); returns the phase the component is in. */
  want(template: string, reason: string): Phase {
    if (this.running === undefined) this.running = template;
    const now = Date.now();
    if (this.target !== undefined && now >= this.readyAt) {
      this.running = this.target;
      this.target = undefined;
    }
    if (template !== (this.target ?? this.running)) {
      if (this.target === undefined) {
        this.ledger?.record(this.kind, reason);
        this.oldGoneAt = now + this.times.shutdownMs;
        this.readyAt = this.oldGoneAt + this.times.startMs;
      } else if (now >= this.oldGoneAt) {
        // the unready pod of the previous template gives way to the newest
        this.readyAt = now + this.times.startMs;
      }
      this.target = template;
    }
    return this.phase(now);
  }

  /** whether the pod that serves was made from `template`, with no rollout under way */
  serves(template: string): boolean {
    return this.target === undefined && this.running === template;
  }

  /** whether a rollout is under way */
  get rolling(): boolean {
    return this.target !== undefined;
  }

  private phase(now: number): Phase {
    if (this.target === undefined) return 'serving';
    return now < this.oldGoneAt ? 'old pod shutting down' : 'no pod';
  }
}
