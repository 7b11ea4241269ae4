/**
 * [cluster-pull-secret] openshift-config/pull-secret, the credentials the cluster's operators and
 * the machine-config daemon pull with: replaced by the site's, or with `merge` the site's registries
 * added to the ones there (the site's entry wins for a registry in both). Plans and logs name only
 * how many registries, never a credential.
 */
import { isDeepStrictEqual } from 'node:util';
import { StepError } from '../base/errors.js';
import type { PlanResult } from '../engine/step.js';
import type { Step } from './step.js';
import { CONFIG_NAMESPACE, type SecretObject } from '../kube/openshift.js';
import { describeAuths } from '../log/redact.js';
import { recordFactoryRegistries } from '../watch/context.js';
import {
  authsOf,
  desiredPullSecret,
  DOCKERCONFIG_KEY,
  PULL_SECRET,
  PULL_SECRET_TARGET,
  readSecret,
} from '../registry/pull-secret.js';

/** What the step reads: the cluster's pull secret, absent when there is none. */
export interface PullSecretView {
  secret?: SecretObject;
}

export const clusterPullSecretStep: Step<PullSecretView> = {
  name: 'cluster-pull-secret',
  group: 'cluster',
  description: '`openshift-config/pull-secret` replaced (or merged)',
  inputs: (site) => ({ pullSecret: site.pullSecret ?? null, policy: site.pullSecretPolicy }),

  async survey(ctx) {
    const secret = await (await ctx.kube()).get<SecretObject>(PULL_SECRET);
    return secret ? { secret } : {};
  },

  plan(view, site): PlanResult {
    if (site.pullSecret === undefined) return { action: 'noop', reason: 'the site-config has no pull secret' };
    const current = readSecret(view.secret);
    const wanted = desiredPullSecret(site.pullSecret, site.pullSecretPolicy, current);
    if (typeof wanted === 'string') return { action: 'conflict', reason: wanted };
    const described = describeAuths(wanted);
    if (current.value !== undefined && isDeepStrictEqual(current.value, wanted))
      return { action: 'noop', reason: `${PULL_SECRET_TARGET} already holds the site's credentials (${described})` };
    const before =
      current.value !== undefined ? describeAuths(current.value) : current.unreadable ? '<unreadable>' : undefined;
    return {
      action: 'change',
      summary: `${site.pullSecretPolicy} the cluster's pull secret`,
      changes: [
        {
          action: view.secret ? 'update' : 'create',
          target: PULL_SECRET_TARGET,
          summary: `${described}, ${site.pullSecretPolicy}`,
          diff: [...(before ? [`- ${before}`] : []), `+ ${described}`],
        },
      ],
    };
  },

  async apply(ctx, view) {
    const kube = await ctx.kube();
    const site = ctx.site.pullSecret!;
    const policy = ctx.site.pullSecretPolicy;
    const current = readSecret(view.secret);
    const wanted = desiredPullSecret(site, policy, current);
    if (typeof wanted === 'string')
      throw new StepError(`cluster-pull-secret: ${wanted}`, { step: 'cluster-pull-secret' });
    // the registries the factory pulled from and the site drops: the watcher reports images still
    // pulled from them (host names only; no credential is kept)
    const dropped = Object.keys(authsOf(current) ?? {}).filter((r) => !(r in wanted.auths));
    if (dropped.length > 0) await recordFactoryRegistries(ctx.fs, ctx.stateDir, dropped);
    if (!view.secret) {
      await kube.create<SecretObject>({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: PULL_SECRET.name, namespace: CONFIG_NAMESPACE },
        type: 'kubernetes.io/dockerconfigjson',
        data: { [DOCKERCONFIG_KEY]: Buffer.from(JSON.stringify(wanted)).toString('base64') },
      });
    } else {
      await kube.update<SecretObject>(PULL_SECRET, (now) => {
        // merged again from what is there now: a registry another writer added meanwhile stays
        const merged = desiredPullSecret(site, policy, readSecret(now));
        if (typeof merged === 'string')
          throw new StepError(`cluster-pull-secret: ${merged}`, { step: 'cluster-pull-secret' });
        return {
          ...now,
          data: { ...now.data, [DOCKERCONFIG_KEY]: Buffer.from(JSON.stringify(merged)).toString('base64') },
        };
      });
    }
    ctx.log.info(
      { secret: PULL_SECRET_TARGET, registries: Object.keys(wanted.auths).length, policy },
      'cluster pull secret written',
    );
  },
};
