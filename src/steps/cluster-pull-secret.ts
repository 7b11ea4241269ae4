/**
 * [cluster-pull-secret] openshift-config/pull-secret, the credentials the cluster's operators and
 * the machine-config daemon pull with: replaced by the site's, or with `merge` the site's registries
 * added to the ones there (the site's entry wins for a registry in both). Plans and logs name only
 * how many registries, never a credential.
 */
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { DockerConfig } from '../config/v1/schema.js';
import { StepError } from '../base/errors.js';
import type { PlanResult } from '../engine/step.js';
import type { Step } from './step.js';
import { CONFIG_NAMESPACE, type SecretObject } from '../kube/openshift.js';
import { describeAuths } from '../log/redact.js';
import { CONTEXT_FILE, recordFactoryRegistries } from '../watch/context.js';
import {
  authsOf,
  desiredPullSecret,
  DOCKERCONFIG_KEY,
  PULL_SECRET,
  PULL_SECRET_TARGET,
  readSecret,
} from '../registry/pull-secret.js';

/** What the step reads: the cluster's pull secret, absent when there is none; where the watcher's context is kept. */
export interface PullSecretView {
  secret?: SecretObject;
  /** the state folder's watch-context.json */
  contextFile: string;
}

/** What apply writes. Holds the site's credentials: never shown, never logged. */
export interface PullSecretDecision {
  write: 'create' | 'update';
  policy: 'replace' | 'merge';
  /** the pull secret to write (replace), or the site's registries to merge into the one there (merge) */
  pullSecret: DockerConfig;
  /**
   * the registries the factory pulled from and the site drops, added (host names only) to the
   * watcher's context: it reports images still pulled from them
   */
  factoryRegistries: string[];
}

const dockerConfigData = (config: DockerConfig) => ({
  [DOCKERCONFIG_KEY]: Buffer.from(JSON.stringify(config)).toString('base64'),
});

/** What the decision makes of the secret as it is; throws, saying why, when the site's cannot be merged into it. */
function written(decision: PullSecretDecision, now: SecretObject | undefined): DockerConfig {
  const config = desiredPullSecret(decision.pullSecret, decision.policy, readSecret(now));
  if (typeof config === 'string')
    throw new StepError(`cluster-pull-secret: ${config}`, { step: 'cluster-pull-secret' });
  return config;
}

export const clusterPullSecretStep: Step<PullSecretView, PullSecretDecision> = {
  name: 'cluster-pull-secret',
  group: 'cluster',
  description: '`openshift-config/pull-secret` replaced (or merged)',
  inputs: (site) => ({ pullSecret: site.pullSecret ?? null, policy: site.pullSecretPolicy }),

  async survey(ctx) {
    const secret = await (await ctx.kube()).get<SecretObject>(PULL_SECRET);
    return { ...(secret && { secret }), contextFile: path.posix.join(ctx.stateDir, CONTEXT_FILE) };
  },

  plan(view, site): PlanResult<PullSecretDecision> {
    if (site.pullSecret === undefined) return { action: 'noop', reason: 'the site-config has no pull secret' };
    const current = readSecret(view.secret);
    const wanted = desiredPullSecret(site.pullSecret, site.pullSecretPolicy, current);
    if (typeof wanted === 'string') return { action: 'conflict', reason: wanted };
    const described = describeAuths(wanted);
    if (current.value !== undefined && isDeepStrictEqual(current.value, wanted))
      return { action: 'noop', reason: `${PULL_SECRET_TARGET} already holds the site's credentials (${described})` };
    const before =
      current.value !== undefined ? describeAuths(current.value) : current.unreadable ? '<unreadable>' : undefined;
    const write = view.secret ? 'update' : 'create';
    const dropped = Object.keys(authsOf(current) ?? {}).filter((r) => !(r in wanted.auths));
    return {
      action: 'change',
      summary: `${site.pullSecretPolicy} the cluster's pull secret`,
      changes: [
        {
          action: write,
          target: PULL_SECRET_TARGET,
          summary: `${described}, ${site.pullSecretPolicy}`,
          diff: [...(before ? [`- ${before}`] : []), `+ ${described}`],
        },
        ...(dropped.length > 0
          ? [
              {
                action: 'update' as const,
                target: view.contextFile,
                summary: `the factory's registries the site drops, by name, for the watcher: ${dropped.join(', ')}`,
              },
            ]
          : []),
      ],
      decision: { write, policy: site.pullSecretPolicy, pullSecret: site.pullSecret, factoryRegistries: dropped },
    };
  },

  async apply(ctx, decision) {
    const kube = await ctx.kube();
    if (decision.factoryRegistries.length > 0)
      await recordFactoryRegistries(ctx.fs, ctx.stateDir, decision.factoryRegistries);
    const secret =
      decision.write === 'create'
        ? await kube.create<SecretObject>({
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: PULL_SECRET.name, namespace: CONFIG_NAMESPACE },
            type: 'kubernetes.io/dockerconfigjson',
            data: dockerConfigData(written(decision, undefined)),
          })
        : // read-modify-write: the decision merged into the secret as it is now, so a registry another
          // writer added meanwhile stays (merge); replace writes the decision's whole
          await kube.update<SecretObject>(PULL_SECRET, (now) => ({
            ...now,
            data: { ...now.data, ...dockerConfigData(written(decision, now)) },
          }));
    ctx.log.info(
      {
        secret: PULL_SECRET_TARGET,
        registries: Object.keys(authsOf(readSecret(secret)) ?? {}).length,
        policy: decision.policy,
      },
      'cluster pull secret written',
    );
  },
};
