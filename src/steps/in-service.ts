/**
 * [in-service] Last: a healthy cluster is not yet a working site. The site-config's `inService`
 * names what must run (Deployments, StatefulSets, DaemonSets by name or label, optionally a URL
 * fetched from the node); this step waits, within its time budget, until every one is rolled out
 * and available, so the console says `done` only then, and names the first one that is not when
 * the budget runs out. Without `inService` there is nothing to wait for. Readiness reported before
 * the run counts once seen holding through the stability window: health's, when they were ready
 * through all of it, else a window of its own.
 */
import { VerificationError } from '../base/errors.js';
import { waiting, type Waiting } from '../watch/in-service.js';
import { factOf } from './facts.js';
import type { InService } from '../config/site.js';
import type { Step, StepContext } from './step.js';
import type { PlanResult } from '../engine/step.js';
import { pollHeld } from '../ports/clock.js';

const line = (w: Waiting) => `${w.what}: ${w.why}`;

interface InServiceView {
  waiting: Waiting[];
  /**
   * whether readiness as it is now may be taken as the run's own view: outside `run` (plan), or when
   * an earlier run saw it hold for the same inputs; else readiness reported before the run started
   * may predate its writes, and counts only once seen holding through the stability window
   */
  seen: boolean;
  stableSeconds: number;
}

/**
 * whether the context may take readiness as it is now (see InServiceView.seen): the health step's
 * window in this run, which the run waits for anyway, may already have shown it holding
 */
const seenInRun = (ctx: StepContext) =>
  ctx.run === undefined ||
  ctx.run.doneAt !== undefined ||
  factOf(ctx, 'health')?.workloadsHeldInRun === ctx.run.startedAt;

/** What settle waits for: the site-config's workloads (and URL) ready, held `stableSeconds` on end. */
export interface InServiceDecision {
  inService: InService;
  /** 0 when readiness as it is now is the run's own (InServiceView.seen) */
  stableSeconds: number;
}

export const inServiceStep: Step<InServiceView, InServiceDecision> = {
  name: 'in-service',
  group: 'cluster',
  description: "the site's own workloads (and URL) ready within the site-config's time budget",
  inputs: (site) => site.inService ?? null,

  async survey(ctx) {
    return {
      waiting: ctx.site.inService ? await waiting(ctx, ctx.site.inService) : [],
      seen: seenInRun(ctx),
      stableSeconds: ctx.options.healthStableSeconds,
    };
  },

  plan({ waiting: now, seen, stableSeconds }, site): PlanResult<InServiceDecision> {
    const spec = site.inService;
    if (!spec) return { action: 'noop', reason: 'the site-config names no workloads to wait for' };
    if (now.length === 0 && seen) return { action: 'noop', reason: 'every workload the site-config names is ready' };
    const decision = { inService: spec, stableSeconds: seen ? 0 : stableSeconds };
    if (now.length === 0)
      return {
        action: 'change',
        summary: `watch for ${stableSeconds}s that ${spec.workloads.length} workload(s) stay ready: their status was reported before this run started`,
        changes: [
          { action: 'apply', target: 'workloads', summary: `seen ready through ${stableSeconds}s by this run` },
        ],
        decision,
      };
    return {
      action: 'change',
      summary: `wait up to ${spec.timeoutSeconds}s for ${now.length} workload(s) to be ready${seen ? '' : `, then ${stableSeconds}s ready`}`,
      changes: now.map((w) => ({ action: 'apply', target: w.what, summary: `wait until ready: ${w.why}` })),
      decision,
    };
  },

  // nothing to apply: the site's workloads roll out by themselves, and settle waits for them
  async settle(ctx, { inService: spec, stableSeconds }) {
    let last: Waiting[] = [];
    const ready = await pollHeld(
      ctx.clock,
      async () => {
        const now = await waiting(ctx, spec);
        if (now[0] && now[0].what !== last[0]?.what)
          ctx.log.info({ waitingFor: now[0].what }, `waiting for ${line(now[0])}`);
        last = now;
        return now.length === 0 ? true : undefined;
      },
      {
        heldMs: stableSeconds * 1000,
        timeoutMs: (spec.timeoutSeconds + stableSeconds) * 1000,
        intervalMs: 1000,
        maxIntervalMs: 5000,
      },
    );
    if (!ready)
      throw new VerificationError(
        last[0]
          ? `in-service: ${last[0].what} not ready after ${spec.timeoutSeconds}s: ${last[0].why}${last.length > 1 ? ` (and ${last.length - 1} more)` : ''}`
          : `in-service: workloads not ready for ${stableSeconds}s on end within ${spec.timeoutSeconds + stableSeconds}s`,
        { step: 'in-service', retryable: true },
      );
    ctx.log.info({ workloads: spec.workloads.length }, 'every workload the site-config names is ready');
  },

  /**
   * Its own: settle has seen the workloads hold through the window, which readiness older than the
   * run cannot show again in a fresh survey; what must still hold is that every one is ready now.
   */
  async verify(ctx) {
    const spec = ctx.site.inService;
    const now = spec ? await waiting(ctx, spec) : [];
    if (now[0]) throw new VerificationError(`in-service: ${line(now[0])}`, { step: 'in-service', retryable: true });
  },
};
