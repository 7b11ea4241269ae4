/**
 * [registry-check] Before the agent switches the pull secret and the mirrors, proof that the site's
 * registries serve this cluster: every image the node needs (src/registry/needed.ts) asked for
 * where CRI-O will pull it from once the site's mirrors are live, with the site's pull secret and
 * trust bundle. Without it a missing digest shows only later, at a reboot, an image garbage
 * collection or a pod's reschedule, as ImagePullBackOff with nobody at the site.
 *
 * A missing image of the release, the platform's pods or a catalog refuses the run before any
 * cluster change (exit 3), naming the image and each registry asked; a site registry that is down,
 * untrusted or refuses the credentials is refused at once. A missing workload image is a warning
 * in the step's result (`status`). `spec.registryCheck: skip` leaves the check out, and the plan
 * says how many images went unchecked. Each image's result is kept in registry-check.json in the
 * state folder.
 *
 * The step changes nothing: its plan is noop or conflict, never a change (its decision type is
 * `never`). registry-check.json is the check's own record, written by the survey that makes it, in
 * a run only: it is kept above all when the check refuses, where no apply follows, and a report of
 * the moment (its time, each request's duration) is no state a verification could find in place.
 */
import path from 'node:path';
import type { DockerConfig } from '../config/v1/schema.js';
import type { Site } from '../config/site.js';
import type { Step } from './step.js';
import type { StepContext } from '../engine/step.js';
import { CONFIG_NAMESPACE, USER_CA_BUNDLE, type SecretObject } from '../kube/openshift.js';
import type { Kube, KubeObject } from '../ports/kube.js';
import { checkImages, verdictOf, type Verdict } from '../registry/check.js';
import { RegistryClient } from '../registry/client.js';
import { neededImages } from '../registry/needed.js';
import { REGISTRY_CHECK_TIMEOUT_SECONDS, REGISTRY_REQUEST_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { desiredPullSecret, readSecret } from '../registry/pull-secret.js';

export const REGISTRY_CHECK_FILE = 'registry-check.json';
/**
 * requests in flight at once, over as many connections: enough to hide a WAN's round trips, few
 * enough for a small mirror host, which checks the bcrypt of an htpasswd user on every request
 * (on a local registry and two busy cores 16 at a time took twice as long as 4, and 4 no less than
 * one at a time: it is over a site's WAN that a few at a time pay off)
 */
export const REGISTRY_CHECK_CONCURRENCY = 4;

export type RegistryCheckView =
  { kind: 'nothing' } | { kind: 'skipped'; images: number } | { kind: 'checked'; verdict: Verdict };

const changesRegistries = (site: Site) =>
  site.pullSecret !== undefined || site.imageDigestMirrors.length > 0 || site.imageTagMirrors.length > 0;

/** The credentials the node will pull with: the pull secret cluster-pull-secret is about to write. */
async function pullCredentials(kube: Kube, site: Site): Promise<DockerConfig['auths']> {
  const secret = await kube.get<SecretObject>({
    apiVersion: 'v1',
    kind: 'Secret',
    namespace: CONFIG_NAMESPACE,
    name: 'pull-secret',
  });
  const current = readSecret(secret);
  if (site.pullSecret === undefined) return (current.value as DockerConfig | undefined)?.auths ?? {};
  const wanted = desiredPullSecret(site.pullSecret, site.pullSecretPolicy, current);
  // a pull secret cluster-pull-secret cannot merge is refused there; the site's own entries are what it writes
  return typeof wanted === 'string' ? site.pullSecret.auths : wanted.auths;
}

/** The CAs the node trusts beside the system's: the site's bundle, else the cluster's user-ca-bundle. */
async function trustedCas(kube: Kube, site: Site): Promise<string | undefined> {
  if (site.trustBundle) return site.trustBundle.caBundlePem;
  const bundle = await kube.get<KubeObject & { data?: Record<string, string> }>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    namespace: CONFIG_NAMESPACE,
    name: USER_CA_BUNDLE,
  });
  return bundle?.data?.['ca-bundle.crt'];
}

/** `registry check: 412/1,180 images` on the console, at most once a second and at the end. */
function progressLine(ctx: StepContext): (done: number, total: number) => void {
  let last = -Infinity;
  return (done, total) => {
    const now = ctx.clock.monotonic();
    if (done < total && now - last < 1000) return;
    last = now;
    const line = `registry check: ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')} images`;
    ctx.log.debug({ done, total }, line);
    void ctx.console?.(line);
  };
}

export const registryCheckStep: Step<RegistryCheckView, never> = {
  name: 'registry-check',
  group: 'cluster',
  description:
    "every image the node needs (release payload, pods, catalogs) asked of the site's registries through its mirrors, pull secret and trust bundle; a missing platform image refuses the move before any cluster change",
  inputs: (site) => ({
    check: site.registryCheck ?? 'check',
    pullSecret: site.pullSecret ?? null,
    policy: site.pullSecretPolicy,
    digest: site.imageDigestMirrors,
    tag: site.imageTagMirrors,
    trust: site.trustBundle?.caBundlePem ?? null,
  }),

  async survey(ctx) {
    if (!changesRegistries(ctx.site)) return { kind: 'nothing' };
    const kube = await ctx.kube();
    const images = await neededImages(kube, ctx.fs);
    if (ctx.site.registryCheck === 'skip') return { kind: 'skipped', images: images.length };
    const caPem = await trustedCas(kube, ctx.site);
    const client = new RegistryClient({
      auths: await pullCredentials(kube, ctx.site),
      ...(caPem !== undefined && { caPem }),
      requestTimeoutMs: REGISTRY_REQUEST_TIMEOUT_SECONDS * 1000,
      maxSockets: REGISTRY_CHECK_CONCURRENCY,
    });
    try {
      const report = await checkImages({
        images,
        digestMirrors: ctx.site.imageDigestMirrors,
        tagMirrors: ctx.site.imageTagMirrors,
        client,
        concurrency: REGISTRY_CHECK_CONCURRENCY,
        timeoutSeconds: REGISTRY_CHECK_TIMEOUT_SECONDS,
        onProgress: progressLine(ctx),
        monotonic: () => ctx.clock.monotonic(),
      });
      const verdict = verdictOf(report);
      ctx.log.info(
        {
          images: report.results.length,
          missing: report.results.filter((r) => r.status === 'missing').map((r) => r.image),
          durationMs: report.durationMs,
        },
        'registry check finished',
      );
      // each image's result, for support; only a run keeps it (plan changes nothing)
      if (ctx.run !== undefined)
        await ctx.fs.writeAtomic(
          path.join(ctx.stateDir, REGISTRY_CHECK_FILE),
          `${JSON.stringify({ checkedAt: ctx.clock.now().toISOString(), ...report }, null, 2)}\n`,
          { mode: 0o600 },
        );
      return { kind: 'checked', verdict };
    } finally {
      client.close();
    }
  },

  plan(view) {
    if (view.kind === 'nothing')
      return { action: 'noop', reason: 'the site-config changes neither the pull secret nor the mirrors' };
    if (view.kind === 'skipped')
      return {
        action: 'noop',
        reason: `skipped (spec.registryCheck: skip): ${view.images.toLocaleString('en-US')} images (release payload, pods, catalogs) not checked against the site's registries`,
      };
    if ('refused' in view.verdict) return { action: 'conflict', reason: view.verdict.refused };
    const { warnings } = view.verdict;
    if (warnings.length === 0) return { action: 'noop', reason: view.verdict.passed };
    return { action: 'noop', reason: `${view.verdict.passed}; warning: ${warnings.join('; ')}`, warnings };
  },
};
