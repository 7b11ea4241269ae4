/**
 * [health] Last: the watcher's checks over the cluster until no finding is an error
 * (ClusterOperators Available and not Degraded, catalogs connected, builds and pools sound, ...),
 * bounded by --health-timeout. Leaves the site's context in the state folder for the companion
 * watcher that keeps watching after the run.
 */
import { VerificationError } from '../base/errors.js';
import type { Change, PlanResult } from '../engine/step.js';
import type { Step, StepContext } from '../config/site.js';
import { pollUntil } from '../ports/clock.js';
import { contextFromSite, siteContext, writeContextFile } from '../watch/context.js';
import type { Finding } from '../watch/model.js';
import { countBySeverity } from '../watch/track.js';
import type { ClusterView } from '../watch/view.js';

/** the first full list of everything watched; the API has answered other steps by now */
const SYNC_TIMEOUT_MS = 120_000;
const SHOWN = 10;

const errorsIn = (findings: readonly Finding[]) => findings.filter((f) => f.severity === 'error');
const line = (f: Finding) => `${f.object}: ${f.reason}`;

async function withView<T>(ctx: StepContext, use: (view: ClusterView) => Promise<T>): Promise<T> {
  const kube = await ctx.kube();
  // the watcher's informers load with the client, which the cluster steps have loaded already
  const { ClusterView } = await import('../watch/view.js');
  const view = new ClusterView(kube.config, {
    clock: ctx.clock,
    log: ctx.log,
    ctx: await siteContext(ctx.fs, ctx.stateDir, ctx.site),
  });
  try {
    view.start();
    await view.synced(SYNC_TIMEOUT_MS);
    return await use(view);
  } finally {
    await view.stop();
  }
}

function describe(findings: readonly Finding[]): string {
  const errors = errorsIn(findings);
  const shown = errors.slice(0, SHOWN).map(line).join('; ');
  return `${errors.length} error finding${errors.length === 1 ? '' : 's'}: ${shown}${errors.length > SHOWN ? `; and ${errors.length - SHOWN} more` : ''}`;
}

function logNonErrors(ctx: StepContext, findings: readonly Finding[]): void {
  for (const f of findings.filter((x) => x.severity === 'warning'))
    ctx.log.warn({ component: f.component, object: f.object }, `health: ${line(f)}`);
}

export const healthStep: Step = {
  name: 'health',
  group: 'cluster',
  description: "the watcher's checks until the cluster is healthy or the timeout passes",
  // the mirrors decide which image findings apply
  inputs: (site) => contextFromSite(site),

  async plan(ctx): Promise<PlanResult> {
    const { findings } = await withView(ctx, async (view) => view.evaluate());
    const n = countBySeverity(findings);
    if (n.error === 0)
      return { action: 'noop', reason: `cluster healthy now (${n.warning} warnings, ${n.info} notes)` };
    const changes: Change[] = errorsIn(findings).map((f) => ({
      action: 'apply',
      target: f.object,
      summary: `wait until it clears: ${f.reason}`,
    }));
    return {
      action: 'change',
      summary: `wait up to ${ctx.options.healthTimeoutSeconds}s for ${n.error} error finding${n.error === 1 ? '' : 's'} to clear`,
      changes,
    };
  },

  async apply(ctx) {
    await writeContextFile(ctx.fs, ctx.stateDir, await siteContext(ctx.fs, ctx.stateDir, ctx.site));
    const timeoutMs = ctx.options.healthTimeoutSeconds * 1000;
    await withView(ctx, async (view) => {
      let last: Finding[] = [];
      const healthy = await pollUntil(
        ctx.clock,
        async () => {
          last = view.evaluate().findings;
          return errorsIn(last).length === 0 ? last : undefined;
        },
        { timeoutMs, intervalMs: 1000, maxIntervalMs: 5000 },
      );
      if (!healthy)
        throw new VerificationError(
          `cluster not healthy after ${ctx.options.healthTimeoutSeconds}s: ${describe(last)}`,
          { step: 'health', retryable: true },
        );
      logNonErrors(ctx, healthy);
    });
  },

  async verify(ctx) {
    const { findings } = await withView(ctx, async (view) => view.evaluate());
    if (errorsIn(findings).length > 0)
      throw new VerificationError(`cluster not healthy: ${describe(findings)}`, { step: 'health', retryable: true });
  },
};
