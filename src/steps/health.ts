/**
 * [health] Last: waits, bounded by --health-timeout, until the rollouts the domain step started have
 * settled (src/kube/rollout.ts: the kube-apiserver's latest revision installed and naming the site's
 * API host, every ClusterOperator Available, not Progressing and not Degraded, the master pool
 * updated) and the watcher's checks find no error (catalogs connected, builds sound, ...), and all of
 * it has held for --health-stable: a rollout passes through moments that look settled. On a node
 * with the single-node dnsmasq configuration, the site's names must also resolve and answer on the
 * node; on any node, what the API and the router (console, OAuth) serve through the site's names
 * must verify against the site's CA bundle alone, with the name as SNI (src/node/served.ts). The
 * console and OAuth endpoints must answer as their operators fetch them, through the cluster's
 * DNS, proxy and trust (src/kube/route-endpoints.ts); the one that does not is named.
 * Only then is the run done; a site DNS that lacks the site's names is then a warning. The site's
 * own workloads (`inService`) are watched through the same window without holding it up: when they
 * were ready through all of it, in-service does not wait a second window after it. Leaves
 * the site's context in the state folder for the companion watcher that keeps watching after the run.
 */
import path from 'node:path';
import { VerificationError } from '../base/errors.js';
import type { Change, PlanResult } from '../engine/step.js';
import type { Step, StepContext } from './step.js';
import { pollHeld } from '../ports/clock.js';
import { CONTEXT_FILE, contextFromSite, siteContext, writeContextFile } from '../watch/context.js';
import type { Finding, WatchContext } from '../watch/model.js';
import { countBySeverity } from '../watch/track.js';
import type { ClusterView } from '../watch/view.js';
import { operatorsChangedAt, unsettled } from '../kube/rollout.js';
import { clusterNames, type ClusterNames } from '../node/dnsmasq.js';
import { siteTrust } from '../node/served.js';
import { checkNodeNames, checkServedNames, checkSiteDns, nameservers } from '../node/site-names-check.js';
import { readIngressConfig, siteDomains } from '../kube/openshift.js';
import { siteNamesOnNode } from '../node/site-names.js';
import { checkEndpoint, clusterProxy, routeEndpoints, unavailable } from '../kube/route-endpoints.js';
import { inServiceReady } from '../watch/in-service.js';
import type { StepFacts } from './facts.js';

/** the first full list of everything watched; the API has answered other steps by now */
const SYNC_TIMEOUT_MS = 120_000;
const SHOWN = 10;

const errorsIn = (findings: readonly Finding[]) => findings.filter((f) => f.severity === 'error');
const line = (f: Finding) => `${f.object}: ${f.reason}`;

/** The site's names: as the single-node dnsmasq configuration has them, else from the cluster's name. */
async function siteNames(ctx: StepContext): Promise<ClusterNames> {
  const onNode = await siteNamesOnNode(ctx.fs, ctx.site);
  if (onNode) return onNode.names;
  const kube = await ctx.kube();
  const { cluster } = await siteDomains(kube, ctx.site, await readIngressConfig(kube));
  return clusterNames(`${cluster}.${ctx.site.baseDomain}`);
}

/**
 * What keeps the site's names from working on the node, and the certificates served through them
 * that do not verify against the site's CA bundle: with the single-node dnsmasq configuration each
 * name must resolve to the internal address and serve there; otherwise each name the node resolves
 * is probed where it leads.
 */
async function nodeNames(ctx: StepContext): Promise<string[]> {
  const nodeServers = nameservers(await ctx.fs.readText('/etc/resolv.conf'));
  const trust = await siteTrust(ctx);
  const onNode = await siteNamesOnNode(ctx.fs, ctx.site);
  if (onNode) return checkNodeNames({ ...onNode, nodeServers, trust });
  return nodeServers.length > 0 ? checkServedNames(await siteNames(ctx), nodeServers, trust) : [];
}

/**
 * Why the console or authentication operator is unavailable, when it is: their endpoints fetched as
 * the operators fetch them from inside the cluster, the failing one named with its cause.
 */
async function endpointProblems(ctx: StepContext): Promise<string[]> {
  const kube = await ctx.kube();
  const down = await unavailable(kube, ['console', 'authentication']);
  if (down.length === 0) return [];
  const found = await routeEndpoints(kube);
  const endpoints = found.endpoints.filter((e) => down.includes(e.component));
  const problems = found.problems.filter((p) => down.some((d) => p.startsWith(`${d}:`)));
  // the cluster's DNS forwards to the node's nameservers; the operators are given proxy.config's status
  const path = { nameservers: nameservers(await ctx.fs.readText('/etc/resolv.conf')), ...(await clusterProxy(kube)) };
  const failed = await Promise.all(endpoints.map((e) => checkEndpoint(e, path)));
  return [...problems, ...failed.filter((f): f is string => f !== undefined)];
}

/** Whether the site's own DNS servers (the site-config's) resolve the site's names: a warning only. */
async function siteDnsWarning(ctx: StepContext): Promise<string | undefined> {
  const servers = ctx.site.network.nmstate['dns-resolver']?.config?.server ?? [];
  if (servers.length === 0) return undefined;
  return checkSiteDns(await siteNames(ctx), servers);
}

/** What keeps the cluster from being done: the watcher's errors, what has not settled, the site's names. */
async function blockers(ctx: StepContext, view: ClusterView): Promise<{ findings: Finding[]; blocking: string[] }> {
  const { findings } = view.evaluate();
  const errors = errorsIn(findings);
  // an operator the watcher already reports is named once
  const rollout = (await unsettled(await ctx.kube(), ctx.site)).filter(
    (u) => !errors.some((f) => u.startsWith(`${f.object} `)),
  );
  return {
    findings,
    blocking: [...errors.map(line), ...rollout, ...(await nodeNames(ctx)), ...(await endpointProblems(ctx))],
  };
}

/** the watcher's view of the cluster with the site's context (`watchContext`), for the time `use` takes */
async function withView<T>(
  ctx: StepContext,
  watchContext: WatchContext,
  use: (view: ClusterView) => Promise<T>,
): Promise<T> {
  const kube = await ctx.kube();
  // the watcher's informers load with the client, which the cluster steps have loaded already
  const { ClusterView } = await import('../watch/view.js');
  const view = new ClusterView(kube.listWatch(), {
    clock: ctx.clock,
    log: ctx.log,
    ctx: watchContext,
  });
  try {
    view.start();
    await view.synced(SYNC_TIMEOUT_MS);
    return await use(view);
  } finally {
    await view.stop();
  }
}

function describe(blocking: readonly string[]): string {
  const shown = blocking.slice(0, SHOWN).join('; ');
  return `${blocking.length} left: ${shown}${blocking.length > SHOWN ? `; and ${blocking.length - SHOWN} more` : ''}`;
}

function logNonErrors(ctx: StepContext, findings: readonly Finding[]): void {
  for (const f of findings.filter((x) => x.severity === 'warning'))
    ctx.log.warn({ component: f.component, object: f.object }, `health: ${line(f)}`);
}

/** What the step reads: the watcher's findings, what blocks the run, and the time it may take. */
export interface HealthView {
  findings: Finding[];
  blocking: string[];
  timeoutSeconds: number;
  stableSeconds: number;
  /** when this run started; absent outside `run` (plan), where the status as it is now decides */
  runStartedAt?: string;
  /** when an earlier run last saw it settled through the window, for the same inputs */
  doneAt?: string;
  /** the newest lastTransitionTime of the ClusterOperators' conditions */
  changedAt?: string;
  /** the survey's time */
  now: string;
  /** the site's context for the companion watcher, and the file in the state folder that keeps it */
  watchContext: WatchContext;
  contextFile: string;
}

/** What the step does: the watcher's context laid down, then the wait for a cluster that holds settled. */
export interface HealthDecision {
  /** written to watch-context.json in the state folder */
  watchContext: WatchContext;
  /** nothing may block for `stableSeconds` on end, within `timeoutSeconds` */
  wait: { timeoutSeconds: number; stableSeconds: number };
}

/**
 * Status a run relies on is what it saw itself: conditions that last changed before the run started
 * (left from the factory or an earlier run) may not yet show the run's writes, so they count only
 * once the settle wait has seen them hold through the stability window, in this run or in an earlier
 * one that found the cluster settled after they last changed.
 */
function observedInRun({ runStartedAt, doneAt, changedAt, now, stableSeconds }: HealthView): boolean {
  if (runStartedAt === undefined) return true;
  if (changedAt === undefined) return false;
  if (doneAt !== undefined && Date.parse(changedAt) <= Date.parse(doneAt)) return true;
  if (Date.parse(changedAt) < Date.parse(runStartedAt)) return false;
  return Date.parse(now) - Date.parse(changedAt) >= stableSeconds * 1000;
}

export const healthStep: Step<HealthView, HealthDecision, StepFacts['health'] | undefined> = {
  name: 'health',
  group: 'cluster',
  description:
    "waits for the kube-apiserver revision, ClusterOperators and master pool to settle and the watcher's checks to pass, through a stability window",
  // the mirrors decide which image findings apply
  inputs: (site) => contextFromSite(site),

  async survey(ctx) {
    const watchContext = await siteContext(ctx.fs, ctx.stateDir, ctx.site);
    const { findings, blocking } = await withView(ctx, watchContext, async (view) => blockers(ctx, view));
    const changedAt = await operatorsChangedAt(await ctx.kube());
    return {
      findings,
      blocking,
      timeoutSeconds: ctx.options.healthTimeoutSeconds,
      stableSeconds: ctx.options.healthStableSeconds,
      ...(ctx.run && { runStartedAt: ctx.run.startedAt }),
      ...(ctx.run?.doneAt !== undefined && { doneAt: ctx.run.doneAt }),
      ...(changedAt !== undefined && { changedAt }),
      now: ctx.clock.now().toISOString(),
      watchContext,
      contextFile: path.posix.join(ctx.stateDir, CONTEXT_FILE),
    };
  },

  plan(view): PlanResult<HealthDecision> {
    const { findings, blocking, timeoutSeconds, stableSeconds } = view;
    const n = countBySeverity(findings);
    if (blocking.length === 0 && observedInRun(view))
      return { action: 'noop', reason: `cluster healthy and settled now (${n.warning} warnings, ${n.info} notes)` };
    const decision = { watchContext: view.watchContext, wait: { timeoutSeconds, stableSeconds } };
    const context: Change = {
      action: 'set',
      target: view.contextFile,
      summary: "the site's context for the companion watcher, which keeps watching after the run",
    };
    if (blocking.length === 0)
      return {
        action: 'change',
        summary: `watch for ${stableSeconds}s that the cluster stays settled: its status has not yet been seen holding since the run started`,
        changes: [
          context,
          {
            action: 'apply',
            target: 'ClusterOperators',
            summary: `seen settled through ${stableSeconds}s by this run`,
          },
        ],
        decision,
      };
    const changes: Change[] = blocking.map((b) => {
      const [target, ...rest] = b.split(': ');
      return {
        action: 'apply',
        target: target!,
        summary: `wait until it clears${rest.length ? `: ${rest.join(': ')}` : ''}`,
      };
    });
    return {
      action: 'change',
      summary: `wait up to ${timeoutSeconds}s for ${blocking.length} thing${blocking.length === 1 ? '' : 's'} to settle, then ${stableSeconds}s stable`,
      changes: [context, ...changes],
      decision,
    };
  },

  /** the site's context for the companion watcher, which keeps watching after the run */
  async apply(ctx, { watchContext }) {
    await writeContextFile(ctx.fs, ctx.stateDir, watchContext);
    // what the workloads did is the settle wait's to say
    return undefined;
  },

  /**
   * Its own: the settle wait has seen the cluster hold through the stability window, which status
   * older than the run cannot show again in a fresh survey; what must still hold is that nothing
   * blocks now.
   */
  async verify(ctx) {
    const watchContext = await siteContext(ctx.fs, ctx.stateDir, ctx.site);
    const { blocking } = await withView(ctx, watchContext, async (view) => blockers(ctx, view));
    if (blocking.length > 0)
      throw new VerificationError(`cluster unsettled again: ${describe(blocking)}`, {
        step: 'health',
        retryable: true,
      });
  },

  async settle(ctx, { watchContext, wait: { timeoutSeconds, stableSeconds } }) {
    const timeoutMs = timeoutSeconds * 1000;
    const stableMs = stableSeconds * 1000;
    const held = await withView(ctx, watchContext, async (view) => {
      let last: string[] = [];
      // the site's own workloads, watched through the same window: in-service then need not wait another
      let workloadsReadySince: number | undefined;
      const healthy = await pollHeld(
        ctx.clock,
        async () => {
          const { findings, blocking } = await blockers(ctx, view);
          last = blocking;
          workloadsReadySince = (await inServiceReady(ctx))
            ? (workloadsReadySince ?? ctx.clock.monotonic())
            : undefined;
          return blocking.length > 0 ? undefined : findings;
        },
        {
          heldMs: stableMs,
          onLost: () => ctx.log.info({ blocking: last.slice(0, SHOWN) }, 'health: unsettled again'),
          timeoutMs,
          intervalMs: 1000,
          maxIntervalMs: 5000,
        },
      );
      if (!healthy)
        throw new VerificationError(
          last.length > 0
            ? `cluster not healthy after ${timeoutSeconds}s: ${describe(last)}`
            : `cluster not stable for ${stableSeconds}s within ${timeoutSeconds}s`,
          { step: 'health', retryable: true },
        );
      logNonErrors(ctx, healthy);
      return workloadsReadySince !== undefined && ctx.clock.monotonic() - workloadsReadySince >= stableMs;
    });
    // once, at the end: the site's DNS servers may be slow to say no
    const warning = await siteDnsWarning(ctx);
    if (warning) ctx.log.warn({ step: 'health' }, `health: ${warning}`);
    return held && ctx.run ? { workloadsHeldInRun: ctx.run.startedAt } : undefined;
  },
};
