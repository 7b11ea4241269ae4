/**
 * The contract every step follows: survey (read the host, change nothing) -> plan (pure: the view
 * and the site decide) -> apply (acts on that plan) -> settle (optional waits) -> verify (the
 * engine's: survey again, the plan must now be noop). The order lives in src/steps/index.ts.
 */
import type { Logger } from '../log/logger.js';
import type { Clock } from '../ports/clock.js';
import type { Exec } from '../ports/exec.js';
import type { RootFs } from '../ports/fs.js';
import type { Kube } from '../ports/kube.js';
import type { Nmstate } from '../ports/nmstate.js';
import type { Systemd } from '../ports/systemd.js';
import type { HoldAt } from './hold.js';
import type { RolloutKind } from '../kube/rollout-costs.js';

/** A step's name, as in logs, the state file and --only; the list of steps is src/steps/index.ts. */
export type StepName = string;
/** node steps run before kubelet starts; cluster steps need its API */
export const STEP_GROUPS = ['node', 'cluster'] as const;
export type StepGroup = (typeof STEP_GROUPS)[number];

/** One thing a step would change, shown by `plan`. Never holds a secret. */
export interface Change {
  action: 'create' | 'update' | 'delete' | 'apply' | 'start' | 'approve' | 'set';
  /** what is changed: a host path, `kind namespace/name`, a unit, ... */
  target: string;
  /** one line on why or what */
  summary?: string;
  /** diff lines: `- old`, `+ new`, `  context` */
  diff?: string[];
  /** the control-plane rollouts the change causes on a single node (src/kube/rollout-costs.ts) */
  rollouts?: RolloutKind[];
}

/**
 * noop: nothing to do. change: what apply makes, as lines to show (`summary`, `changes`) and as
 * the decision apply performs (`decision`, never shown: it may hold what the site-config holds).
 * conflict: the run stops before this step changes anything (exit 3). declined: the step refuses
 * its own change only, the node stays as it is for it and the run goes on; the reason is kept in
 * the run's state, and `status`, the hub report and the run's last line say it (a rename the
 * cluster would not survive: the move completes under the factory name). A later run plans the
 * step again.
 */
export type PlanResult<D = unknown> = (
  | { action: 'noop'; reason: string }
  | { action: 'change'; summary: string; changes: Change[]; decision: D }
  | { action: 'conflict'; reason: string }
  | { action: 'declined'; reason: string }
) & {
  /** what the step found worth a warning: logged once, when the step is planned (not when verified) */
  warnings?: string[];
};

/** A step's plan as `plan` shows it: the lines, without the decision. */
export type StepPlan = (
  Extract<PlanResult, { action: 'noop' | 'conflict' | 'declined' }> | Omit<ChangePlan, 'decision'>
) & { step: StepName };
export type ChangePlan<D = unknown> = Extract<PlanResult<D>, { action: 'change' }>;

export interface RunOptions {
  /** seconds the health step waits for a healthy cluster */
  healthTimeoutSeconds: number;
  /** seconds the cluster must stay settled before the health step calls it done */
  healthStableSeconds: number;
  /** seconds hold-upgrades waits for an update or a pool roll-out to finish by itself; default in base/timeouts.ts */
  busyWaitSeconds?: number;
}

/**
 * What the engine itself reads of a site-config: its name. The steps read the rest, through the
 * site-config's own type (config/site.ts binds it), so the engine does not depend on its shape.
 */
export interface SiteBase {
  name: string;
}

/** The ports a step may use; each has one real adapter and is replaceable in tests. */
export interface StepContext<S extends SiteBase = SiteBase> {
  site: S;
  fs: RootFs;
  exec: Exec;
  systemd(): Promise<Systemd>;
  nmstate: Nmstate;
  kube(): Promise<Kube>;
  clock: Clock;
  log: Logger;
  /** host path of the state folder, for material a step must keep between runs */
  stateDir: string;
  /** hash of the whole site-config (its files' digests): what the kubelet gate is opened for */
  configHash: string;
  options: RunOptions;
  /** what the engine tells the step of the run it is in; absent outside `run` */
  run?: StepRun;
  /**
   * a line on the technician's console (the banner), for progress a step makes while it surveys;
   * absent outside the CLI
   */
  console?(line: string): Promise<void>;
  /**
   * the facts the run was given before its first step (admission's) and, in a run, every fact a
   * step's apply and settle recorded in the run's state (src/steps/facts.ts lists each kind)
   */
  facts?: Readonly<Record<StepName, unknown>>;
}

/** The engine's record of the run, for the step it runs: the one channel between the run and a step. */
export interface StepRun {
  /** when this run started (ISO 8601): status older than that counts only once seen stable */
  startedAt: string;
  /** when this step was last recorded done for the same inputs (ISO 8601); absent when it was not */
  doneAt?: string;
  /** hold points for power-cut tests (hold.ts) */
  hold?: HoldAt;
  /** says what a step waits for while it applies and settles, as `status` shows it (its DETAIL) */
  progress?(message: string): Promise<void>;
}

export interface Step<S extends SiteBase = SiteBase, V = unknown, D = unknown, F = unknown> {
  name: StepName;
  group: StepGroup;
  /** one line for the README's step table: what the step does */
  description: string;
  /** the slice of the site-config the step reads: its hash tells a rerun whether a done step is still done */
  inputs(site: S): unknown;
  /**
   * reads what the step decides on from the host and the cluster; changes nothing. `after`: the
   * facts this run's apply returned, when the engine surveys again to verify it
   */
  survey(ctx: StepContext<S>, after?: F): Promise<V>;
  /**
   * the step's decision rules, pure: plain data from the view and the site, no I/O. A change
   * carries its decision (D, plain data): everything apply does, and nothing more; a step that
   * only waits decides what it waits for
   */
  plan(view: V, site: S): PlanResult<D>;
  /**
   * performs the decision of a change plan, exactly: it decides nothing again from the host and
   * does nothing the decision does not hold; absent for a step that only waits. Returns the facts
   * its verification needs (F, plain JSON): the engine hands them to survey and verify and records
   * them in the run's state (src/steps/facts.ts lists every step's).
   */
  apply?(ctx: StepContext<S>, decision: D): Promise<F>;
  /**
   * waits, bounded, for what the decision set going (routes admitted, a healthy cluster, ...);
   * may add to apply's facts (`after`) what the wait saw: what it returns, when not undefined,
   * replaces them
   */
  settle?(ctx: StepContext<S>, decision: D, after?: F): Promise<F | undefined>;
  /**
   * Throws VerificationError when the result does not hold. Absent: the engine surveys again and
   * the plan must be noop. A step that gives its own says why in a comment. `after` as for survey.
   */
  verify?(ctx: StepContext<S>, after?: F): Promise<void>;
}
