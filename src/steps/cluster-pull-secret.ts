/**
 * [cluster-pull-secret] openshift-config/pull-secret, the credentials the cluster's operators and
 * the machine-config daemon pull with: replaced by the site's, or with `merge` the site's registries
 * added to the ones there (the site's entry wins for a registry in both). Plans and logs name only
 * how many registries, never a credential.
 */
import { isDeepStrictEqual } from 'node:util';
import type { DockerConfig } from '../config/v1/schema.js';
import { StepError, VerificationError } from '../base/errors.js';
import type { PlanResult } from '../engine/step.js';
import type { LegacySiteStep, StepContext } from '../config/site.js';
import { CONFIG_NAMESPACE, type SecretObject } from '../kube/openshift.js';
import { describeAuths } from '../log/redact.js';
import { recordFactoryRegistries } from '../watch/context.js';

const DOCKERCONFIG_KEY = '.dockerconfigjson';
const PULL_SECRET = { apiVersion: 'v1', kind: 'Secret', name: 'pull-secret', namespace: CONFIG_NAMESPACE };
const TARGET = `Secret ${CONFIG_NAMESPACE}/pull-secret`;

type Read = { value?: unknown; unreadable?: string };

function readSecret(secret: SecretObject | undefined): Read {
  const data = secret?.data?.[DOCKERCONFIG_KEY];
  if (data === undefined) return {};
  try {
    return { value: JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as unknown };
  } catch {
    // never quote the parser's message: it shows the text around the error, credentials included
    return { unreadable: `${TARGET} does not hold valid JSON in ${DOCKERCONFIG_KEY}` };
  }
}

function authsOf(current: Read): Record<string, unknown> | undefined {
  const auths = (current.value as { auths?: unknown } | undefined)?.auths;
  return auths !== null && typeof auths === 'object' && !Array.isArray(auths)
    ? (auths as Record<string, unknown>)
    : undefined;
}

/** The pull secret the cluster should hold, from what it holds now; a string says why it cannot be made. */
export function desiredPullSecret(
  site: DockerConfig,
  policy: 'replace' | 'merge',
  current: Read,
): DockerConfig | string {
  if (policy === 'replace') return site;
  if (current.unreadable) return `${current.unreadable}, so the site's registries cannot be merged into it`;
  if (current.value === undefined) return site;
  const auths = authsOf(current);
  if (auths === undefined) return `${TARGET} holds no "auths" object to merge into`;
  return { ...(current.value as object), auths: { ...(auths as DockerConfig['auths']), ...site.auths } };
}

async function survey(ctx: StepContext) {
  const kube = await ctx.kube();
  const secret = await kube.get<SecretObject>(PULL_SECRET);
  const current = readSecret(secret);
  const wanted =
    ctx.site.pullSecret === undefined
      ? undefined
      : desiredPullSecret(ctx.site.pullSecret, ctx.site.pullSecretPolicy, current);
  return { kube, secret, current, wanted };
}

function planOf(ctx: StepContext, s: Awaited<ReturnType<typeof survey>>): PlanResult {
  if (s.wanted === undefined) return { action: 'noop', reason: 'the site-config has no pull secret' };
  if (typeof s.wanted === 'string') return { action: 'conflict', reason: s.wanted };
  const described = describeAuths(s.wanted);
  if (s.current.value !== undefined && isDeepStrictEqual(s.current.value, s.wanted))
    return { action: 'noop', reason: `${TARGET} already holds the site's credentials (${described})` };
  const before =
    s.current.value !== undefined ? describeAuths(s.current.value) : s.current.unreadable ? '<unreadable>' : undefined;
  return {
    action: 'change',
    summary: `${ctx.site.pullSecretPolicy} the cluster's pull secret`,
    changes: [
      {
        action: s.secret ? 'update' : 'create',
        target: TARGET,
        summary: `${described}, ${ctx.site.pullSecretPolicy}`,
        diff: [...(before ? [`- ${before}`] : []), `+ ${described}`],
      },
    ],
  };
}

export const clusterPullSecretStep: LegacySiteStep = {
  name: 'cluster-pull-secret',
  group: 'cluster',
  description: '`openshift-config/pull-secret` replaced (or merged)',
  inputs: (site) => ({ pullSecret: site.pullSecret ?? null, policy: site.pullSecretPolicy }),

  async plan(ctx) {
    return planOf(ctx, await survey(ctx));
  },

  async apply(ctx) {
    const s = await survey(ctx);
    const wanted = s.wanted;
    if (wanted === undefined || typeof wanted === 'string') return;
    // the registries the factory pulled from and the site drops: the watcher reports images still
    // pulled from them (host names only; no credential is kept)
    const dropped = Object.keys(authsOf(s.current) ?? {}).filter((r) => !(r in wanted.auths));
    if (dropped.length > 0) await recordFactoryRegistries(ctx.fs, ctx.stateDir, dropped);
    if (!s.secret) {
      await s.kube.create<SecretObject>({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: PULL_SECRET.name, namespace: CONFIG_NAMESPACE },
        type: 'kubernetes.io/dockerconfigjson',
        data: { [DOCKERCONFIG_KEY]: Buffer.from(JSON.stringify(wanted)).toString('base64') },
      });
    } else {
      const site = ctx.site.pullSecret!;
      await s.kube.update<SecretObject>(PULL_SECRET, (current) => {
        // merged again from what is there now: a registry another writer added meanwhile stays
        const wanted = desiredPullSecret(site, ctx.site.pullSecretPolicy, readSecret(current));
        if (typeof wanted === 'string')
          throw new StepError(`cluster-pull-secret: ${wanted}`, { step: 'cluster-pull-secret' });
        return {
          ...current,
          data: { ...current.data, [DOCKERCONFIG_KEY]: Buffer.from(JSON.stringify(wanted)).toString('base64') },
        };
      });
    }
    ctx.log.info(
      { secret: TARGET, registries: Object.keys(wanted.auths).length, policy: ctx.site.pullSecretPolicy },
      'cluster pull secret written',
    );
  },

  async verify(ctx) {
    const plan = planOf(ctx, await survey(ctx));
    if (plan.action !== 'noop')
      throw new VerificationError(`cluster-pull-secret: ${TARGET} does not hold the site's credentials after apply`, {
        step: 'cluster-pull-secret',
        retryable: true,
      });
  },
};
