/**
 * [routes] Every route whose host lies under an old apps domain moves to the site's: the part
 * before the domain, the namespace, the name and the rest of the spec stay. A route whose host the
 * openshift-apiserver generated (annotation openshift.io/host.generated=true, e.g. the monitoring
 * routes) moves to the host it would be given now, `<name>-<namespace>.<site apps domain>`, whatever
 * domain it was under. Routes with hosts of their own (a shop's public name) are not touched, nor
 * are the routes an operator owns (console, downloads, oauth-openshift, canary): their operator
 * would put a patched host back; the domain step moves them through their componentRoutes. Runs
 * before the domain step, while the API servers are stable. Each route is one merge patch of
 * spec.host, sent in parallel with a bound so a node with a thousand routes neither waits on them
 * one by one nor floods an API server that has just restarted.
 */
import pLimit from 'p-limit';
import type { Step } from './step.js';
import {
  HOST_GENERATED_ANNOTATION,
  isOperatorRoute,
  oldAppsDomains,
  readIngressConfig,
  ROUTE_API,
  siteDomains,
} from '../kube/openshift.js';
import { describeRef, refOf, type KubeObject, type ObjectRef } from '../ports/kube.js';
import type { StepFacts } from './facts.js';

/** parallel patches: enough to hide the round trips, few enough for a single-node API server */
export const ROUTE_CONCURRENCY = 32;

type Route = KubeObject & { spec?: { host?: string } };

/** One route's move: a merge patch of its spec.host alone. */
interface Move {
  route: ObjectRef;
  from: string;
  to: string;
}

/** What apply does: the routes to move, each to its new host. */
export interface RoutesDecision {
  moves: Move[];
}

/** The host under the new domain, or undefined when `host` is under none of the old ones. */
export function movedHost(host: string, oldDomains: readonly string[], newDomain: string): string | undefined {
  const old = oldDomains.find((d) => host.endsWith(`.${d}`));
  return old === undefined ? undefined : `${host.slice(0, host.length - old.length)}${newDomain}`;
}

/** Where a route goes: a generated host is generated again for the new domain; others by movedHost. */
export function targetHost(route: Route, oldDomains: readonly string[], newDomain: string): string | undefined {
  const host = route.spec?.host;
  if (host === undefined || host.endsWith(`.${newDomain}`) || isOperatorRoute(route.metadata)) return undefined;
  // <name, dots as dashes>-<namespace>: the first label, as the openshift-apiserver generates it; a
  // host someone set by hand later keeps the annotation but not this label, and is not the generator's
  const label = `${route.metadata.name.replace(/\./g, '-')}-${route.metadata.namespace}`;
  if (route.metadata.annotations?.[HOST_GENERATED_ANNOTATION] === 'true' && host.startsWith(`${label}.`))
    return `${label}.${newDomain}`;
  return movedHost(host, oldDomains, newDomain);
}

/** What the step reads: every route, the site's apps domain and the old ones. */
export interface RoutesView {
  routes: Route[];
  newDomain: string;
  oldDomains: string[];
}

const movesOf = (view: RoutesView): Move[] =>
  view.routes.flatMap((route) => {
    const to = targetHost(route, view.oldDomains, view.newDomain);
    return to === undefined ? [] : [{ route: refOf(route), from: route.spec!.host!, to }];
  });

/**
 * For the survey after the patches: the newest of the patched routes' resourceVersions (the watch
 * cache holds every patch once it holds that one), or null when one is not a number (versions are
 * opaque; an etcd revision is one), and the survey reads from etcd.
 */
const newest = (versions: (string | undefined)[]): string | null => {
  let max = 0n;
  for (const v of versions) {
    if (v === undefined || !/^\d+$/.test(v)) return null;
    if (BigInt(v) > max) max = BigInt(v);
  }
  return max.toString();
};

export const routesStep: Step<RoutesView, RoutesDecision, StepFacts['routes']> = {
  name: 'routes',
  group: 'cluster',
  description:
    'routes under the old apps domain and generated hosts moved to the new one; custom hosts and operator-owned routes left alone',
  inputs: (site) => ({ baseDomain: site.baseDomain, clusterName: site.clusterName ?? null }),

  /**
   * Lists every route from the API server's watch cache: a thousand routes come back in a sixth of
   * a quorum read's time. A route changed in the milliseconds the cache trails etcd is seen as it
   * was; a plan that moves it anyway patches the same host it would have. The verification's list
   * (`after` the patches) is at least as new as they are, so it sees them.
   */
  async survey(ctx, after) {
    const kube = await ctx.kube();
    const ingress = await readIngressConfig(kube);
    const { apps } = await siteDomains(kube, ctx.site, ingress);
    const oldDomains = await oldAppsDomains(ctx.fs, ctx.stateDir, ingress, apps);
    const notOlderThan = after === undefined ? '0' : after.patchedUpTo;
    const routes = await kube.list<Route>(ROUTE_API, 'Route', notOlderThan === null ? {} : { notOlderThan });
    return { routes, newDomain: apps, oldDomains };
  },

  plan(view) {
    const moves = movesOf(view);
    const { newDomain, oldDomains } = view;
    if (moves.length === 0)
      return {
        action: 'noop',
        reason: `no route is left under ${oldDomains.join(' or ') || 'an old apps domain'} (the operators' own routes are the domain step's)`,
      };
    return {
      action: 'change',
      summary: `move ${moves.length} route${moves.length === 1 ? '' : 's'} from ${oldDomains.join(', ')} to ${newDomain}`,
      changes: moves.map((m) => ({
        action: 'update',
        target: describeRef(m.route),
        diff: [`- spec.host: ${m.from}`, `+ spec.host: ${m.to}`],
      })),
      decision: { moves },
    };
  },

  async apply(ctx, { moves }) {
    const kube = await ctx.kube();
    const limit = pLimit(ROUTE_CONCURRENCY);
    const patched = await Promise.all(
      moves.map((m) =>
        limit(async () => {
          // a merge patch of the host alone: whatever else the route's owner changes meanwhile stays
          const route = await kube.mergePatch<Route>(m.route, { spec: { host: m.to } });
          ctx.log.debug({ route: describeRef(m.route), from: m.from, to: m.to }, 'route moved');
          return route.metadata.resourceVersion;
        }),
      ),
    );
    ctx.log.info({ routes: moves.length }, `${moves.length} routes moved`);
    return { patchedUpTo: newest(patched) };
  },
};
