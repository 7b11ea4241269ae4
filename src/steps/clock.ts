/**
 * [clock] After the network and the site's NTP settings (the ntp step), before kubelet and every
 * certificate the cluster steps issue: the time the agent judges by is made trustworthy
 * (src/base/true-time.ts). chronyd is given a bounded wait (CLOCK_SYNC_TIMEOUT_SECONDS, in the
 * clock budget) to synchronise with the site's time servers and step the clock; then what
 * admission deferred (a signature or CA that looked expired or not yet valid on the unsynchronised
 * clock) is judged again, and so is every certificate of the site-config admission passed (a CA
 * that expired while the clock lagged passed on it), in both directions; the journal says so. A
 * clock before the lower bound (signature, factory seal, agent build) that no time server corrected
 * stops the run with what to fix.
 *
 * The shelf life is judged here too, on that clock: the power-on-by date `factory seal` recorded
 * is shown; near it the run warns, and past the expiry it was set by (a certificate nothing on the
 * node renews) the run is refused, since the cluster cannot recover by itself.
 */
import { RefusedError } from '../base/errors.js';
import { CLOCK_SYNC_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { decideClock, lowerBound, type SyncState, type TimeMark } from '../base/true-time.js';
import type { Finding } from '../base/findings.js';
import type { Step } from './step.js';
import type { PlanResult } from '../engine/step.js';
import { chronySyncState, chronyWaitSync } from '../node/chrony.js';
import { readShipment, shelfLife, type Shipment } from '../node/shipment.js';
import { timeJudgments } from '../config/time-judgments.js';
import { factOf, type StepFacts } from './facts.js';

export interface ClockView {
  now: Date;
  sync: SyncState;
  /** set once the bounded wait for chronyd is over, in this run */
  waited: boolean;
  bound: TimeMark | undefined;
  deferred: Finding[];
  /** the site-config's certificates admission passed, judged again on this clock */
  passed: Finding[];
  powerOnBy?: NonNullable<Shipment['powerOnBy']>;
}

/** What apply does: wait this long, at most, for chronyd to synchronise the clock (waitsync, then makestep). */
export interface ClockSyncDecision {
  waitSeconds: number;
}

/** The step's decision: the clock's, then the shelf life's on it. */
export function planClock(view: ClockView): PlanResult<ClockSyncDecision> {
  const clock = decideClock(view);
  if (clock.verdict === 'refuse') return { action: 'conflict', reason: clock.reason };
  if (clock.verdict === 'wait')
    return {
      action: 'change',
      summary: `wait up to ${CLOCK_SYNC_TIMEOUT_SECONDS}s for chronyd to synchronise the clock, then judge time again`,
      changes: [{ action: 'start', target: 'chronyd', summary: `waitsync, then makestep: ${clock.why}` }],
      decision: { waitSeconds: CLOCK_SYNC_TIMEOUT_SECONDS },
    };
  const shelf = view.powerOnBy && shelfLife(view.now, view.powerOnBy);
  if (shelf?.verdict === 'refuse') return { action: 'conflict', reason: shelf.reason };
  return { action: 'noop', reason: [...clock.notes, ...(shelf ? [shelf.line] : [])].join('; ') };
}

export const clockStep: Step<ClockView, ClockSyncDecision, StepFacts['clock']> = {
  name: 'clock',
  group: 'node',
  description:
    "chronyd synchronised with the site's time servers (bounded wait, then makestep); what admission deferred judged again on that clock; the power-on-by date checked",
  inputs: () => null,

  /** `after` the bounded wait for chronyd, the clock is judged as it is: the wait is made once per run */
  async survey(ctx, after) {
    const admitted = factOf(ctx, 'admission') ?? { deferred: [], timeMarks: [] };
    const shipment = await readShipment(ctx.fs, ctx.stateDir);
    const marks = [
      ...admitted.timeMarks,
      ...(shipment ? [{ what: 'factory seal', at: new Date(shipment.shippedAt) }] : []),
    ];
    return {
      now: ctx.clock.now(),
      sync: await chronySyncState(ctx.fs, ctx.exec),
      waited: after?.waited === true,
      bound: lowerBound(marks),
      deferred: admitted.deferred,
      passed: timeJudgments(ctx.site),
      ...(shipment?.powerOnBy && { powerOnBy: shipment.powerOnBy }),
    };
  },

  plan: (view) => planClock(view),

  async apply(ctx, { waitSeconds }) {
    const before = ctx.clock.now();
    const synced = await chronyWaitSync(ctx.exec, waitSeconds);
    const after = ctx.clock.now();
    if (synced)
      ctx.log.info(
        { stepSeconds: Math.round((after.getTime() - before.getTime()) / 1000) },
        `clock synchronised by chronyd: ${after.toISOString()}`,
      );
    else ctx.log.warn(`chronyd did not synchronise the clock within ${waitSeconds}s: no time server answered`);
    return { waited: true };
  },

  /** the engine's verification plans again: a refusal now is the clock's or the shelf's, said plainly */
  async verify(ctx, after) {
    const view = await clockStep.survey(ctx, after);
    const plan = planClock(view);
    if (plan.action === 'conflict') throw new RefusedError(`clock: ${plan.reason}`, { step: 'clock' });
    if (plan.action === 'noop') for (const note of plan.reason.split('; ')) ctx.log.info({ step: 'clock' }, note);
  },
};
