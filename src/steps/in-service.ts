/**
 * [in-service] Last: a healthy cluster is not yet a working site. The site-config's `inService`
 * names what must run (Deployments, StatefulSets, DaemonSets by name or label, optionally a URL
 * fetched from the node); this step waits, within its time budget, until every one is rolled out
 * and available, so the console says `done` only then, and names the first one that is not when
 * the budget runs out. Without `inService` there is nothing to wait for. Readiness reported before
 * the run counts once seen holding through the stability window: health's, when they were ready
 * through all of it, else a window of its own.
 */
import http from 'node:http';
import https from 'node:https';
import type { InService } from '../config/site.js';
import type { Workload } from '../config/v1/schema.js';
import { errorMessage, VerificationError } from '../base/errors.js';
import { factOf } from './facts.js';
import type { Step, StepContext } from './step.js';
import type { PlanResult } from '../engine/step.js';
import { workloadNotReady, type WorkloadObject } from '../kube/workloads.js';
import { pollHeld } from '../ports/clock.js';
import type { Kube } from '../ports/kube.js';

const APPS = 'apps/v1';
/** one probe's bound: a site service answers at once or not at all */
const PROBE_TIMEOUT_MS = 5_000;

interface Waiting {
  /** `Deployment vdu/du-app`, `DaemonSet vdu (app=du)`, `https://...` */
  what: string;
  why: string;
}

export const describeWorkload = (w: Workload): string =>
  w.name !== undefined ? `${w.kind} ${w.namespace}/${w.name}` : `${w.kind} ${w.namespace} (${w.selector})`;

async function workloadWaiting(kube: Kube, w: Workload): Promise<Waiting[]> {
  const what = describeWorkload(w);
  if (w.name !== undefined) {
    const obj = await kube.get<WorkloadObject>({
      apiVersion: APPS,
      kind: w.kind,
      namespace: w.namespace,
      name: w.name,
    });
    if (!obj) return [{ what, why: 'does not exist' }];
    const why = workloadNotReady(w.kind, obj);
    return why ? [{ what, why }] : [];
  }
  const found = await kube.list<WorkloadObject>(APPS, w.kind, { namespace: w.namespace, labelSelector: w.selector! });
  if (found.length === 0) return [{ what, why: 'none exists' }];
  return found.flatMap((obj) => {
    const why = workloadNotReady(w.kind, obj);
    return why ? [{ what: `${w.kind} ${w.namespace}/${obj.metadata.name}`, why }] : [];
  });
}

/** Fetches the URL from the node; undefined when it answered 2xx. */
export function probeProblem(probe: NonNullable<InService['probe']>): Promise<string | undefined> {
  const url = new URL(probe.url);
  const get = url.protocol === 'https:' ? https.get : http.get;
  return new Promise((resolve) => {
    const req = get(
      url,
      { timeout: PROBE_TIMEOUT_MS, ...(url.protocol === 'https:' && { rejectUnauthorized: !probe.insecure }) },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(code >= 200 && code < 300 ? undefined : `answered ${code}`);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`)));
    req.on('error', (err) => resolve(errorMessage(err)));
  });
}

/** Everything not ready yet, in the site-config's order: workloads first, then the probe. */
async function waiting(ctx: StepContext, spec: InService): Promise<Waiting[]> {
  const kube = spec.workloads.length > 0 ? await ctx.kube() : undefined;
  const out: Waiting[] = [];
  for (const w of spec.workloads) out.push(...(await workloadWaiting(kube!, w)));
  if (spec.probe) {
    const why = await probeProblem(spec.probe);
    if (why) out.push({ what: spec.probe.url, why });
  }
  return out;
}

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
 * Whether every workload (and URL) the site-config names is ready now; health asks it while it
 * waits for the cluster, and records the run in which they were ready through its whole window.
 */
export const inServiceReady = async (ctx: StepContext): Promise<boolean> =>
  !ctx.site.inService || (await waiting(ctx, ctx.site.inService)).length === 0;

/**
 * whether the context may take readiness as it is now (see InServiceView.seen): the health step's
 * window in this run, which the run waits for anyway, may already have shown it holding
 */
const seenInRun = (ctx: StepContext) =>
  ctx.runStartedAt === undefined ||
  ctx.doneAt !== undefined ||
  factOf(ctx, 'health')?.workloadsHeldInRun === ctx.runStartedAt;

export const inServiceStep: Step<InServiceView> = {
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

  plan({ waiting: now, seen, stableSeconds }, site): PlanResult {
    const spec = site.inService;
    if (!spec) return { action: 'noop', reason: 'the site-config names no workloads to wait for' };
    if (now.length === 0 && seen) return { action: 'noop', reason: 'every workload the site-config names is ready' };
    if (now.length === 0)
      return {
        action: 'change',
        summary: `watch for ${stableSeconds}s that ${spec.workloads.length} workload(s) stay ready: their status was reported before this run started`,
        changes: [
          { action: 'apply', target: 'workloads', summary: `seen ready through ${stableSeconds}s by this run` },
        ],
      };
    return {
      action: 'change',
      summary: `wait up to ${spec.timeoutSeconds}s for ${now.length} workload(s) to be ready${seen ? '' : `, then ${stableSeconds}s ready`}`,
      changes: now.map((w) => ({ action: 'apply', target: w.what, summary: `wait until ready: ${w.why}` })),
    };
  },

  // nothing to apply: the site's workloads roll out by themselves, and settle waits for them
  async settle(ctx) {
    const spec = ctx.site.inService!;
    const stableSeconds = seenInRun(ctx) ? 0 : ctx.options.healthStableSeconds;
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
