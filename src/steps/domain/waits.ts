/**
 * The domain step's waits, bounded by --health-timeout: the operators' routes admitted on their new
 * hosts, then the site's names serving what verifies against the site's CA bundle.
 */
import { VerificationError } from '../../base/errors.js';
import type { SiteDomains } from '../../kube/openshift.js';
import { clusterNames } from '../../node/dnsmasq.js';
import { siteTrust } from '../../node/served.js';
import { checkServedNames, nameservers } from '../../node/site-names-check.js';
import { pollUntil } from '../../ports/clock.js';
import type { StepContext } from '../step.js';
import { operatorRoutes, pendingRoutes } from './router.js';

export const isOAuth = (r: { namespace: string }) => r.namespace === 'openshift-authentication';

/** Waits, bounded by --health-timeout, until the operators' routes `which` picks are admitted on their new hosts. */
export async function admitted(
  ctx: StepContext,
  domains: SiteDomains,
  which: (r: { namespace: string; name: string }) => boolean,
  poll: { intervalMs: number; maxIntervalMs: number },
): Promise<void> {
  const kube = await ctx.kube();
  let pending: ReturnType<typeof pendingRoutes> = [];
  const settled = await pollUntil(
    ctx.clock,
    async () => {
      const before = pending.length;
      pending = pendingRoutes(domains, await operatorRoutes(kube)).filter(which);
      // said while the router and the operators roll out: status shows it as the step's detail
      if (pending.length > 0 && pending.length !== before)
        await ctx.run?.progress?.(
          `waiting for ${pending.map((r) => `Route ${r.namespace}/${r.name}`).join(', ')} to be admitted on the site's domain (the router rolls out for its new certificate)`,
        );
      return pending.length === 0 ? true : undefined;
    },
    { timeoutMs: ctx.options.healthTimeoutSeconds * 1000, ...poll },
  );
  if (!settled)
    throw new VerificationError(
      `domain: not admitted on the new host after ${ctx.options.healthTimeoutSeconds}s: ${pending.map((r) => `Route ${r.namespace}/${r.name} at ${r.wanted} (${r.operator})`).join('; ')}`,
      { step: 'domain', retryable: true },
    );
}

/**
 * Waits, bounded by --health-timeout, until what the API server and the router serve through the
 * site's names (where the node resolves them) verifies against the site's CA bundle: the router
 * restarts for its new certificate, the API server takes its named certificate in a revision.
 */
export async function served(ctx: StepContext, domains: SiteDomains): Promise<void> {
  const nodeServers = nameservers(await ctx.fs.readText('/etc/resolv.conf'));
  if (nodeServers.length === 0) return;
  // the cluster's own domain, <cluster>.<baseDomain>, is what follows api. in the decided names
  const names = clusterNames(domains.api.slice('api.'.length));
  const trust = await siteTrust(ctx);
  let problems: string[] = [];
  const settled = await pollUntil(
    ctx.clock,
    async () => {
      problems = await checkServedNames(names, nodeServers, trust);
      return problems.length === 0 ? true : undefined;
    },
    { timeoutMs: ctx.options.healthTimeoutSeconds * 1000, intervalMs: 1000, maxIntervalMs: 5000 },
  );
  if (!settled)
    throw new VerificationError(
      `domain: the site's names do not serve the site's certificates after ${ctx.options.healthTimeoutSeconds}s: ${problems.join('; ')}`,
      { step: 'domain', retryable: true },
    );
}
