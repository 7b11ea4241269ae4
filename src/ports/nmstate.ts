/** NetworkManager through nmstate's desired-state model (the adapter runs nmstatectl). */
import type { NmstateState } from '../base/nmstate.js';

export interface Nmstate {
  /** the current network state */
  show(): Promise<NmstateState>;
  /**
   * What this backend cannot apply of the state: one line per feature, naming its path and why.
   * Empty when it applies all of it. Asked at plan time, before any step changes the node.
   */
  unsupported(state: NmstateState): string[];
  /** applies without committing; NetworkManager rolls back by itself when the timeout passes */
  apply(state: NmstateState, options: { timeoutSeconds: number }): Promise<{ checkpoint: string }>;
  commit(checkpoint: string): Promise<void>;
  rollback(checkpoint: string): Promise<void>;
}
