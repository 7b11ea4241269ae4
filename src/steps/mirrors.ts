/**
 * [mirrors] The site's registry mirrors: an ImageDigestMirrorSet and an ImageTagMirrorSet where the
 * cluster serves them (OpenShift 4.13 on), else an ImageContentSourcePolicy for the digest mirrors;
 * tag mirrors need ImageTagMirrorSet, and a cluster without it is refused with that reason rather
 * than left pulling by tag from registries it cannot reach. The objects the agent owns carry its
 * managed-by label, so a rerun replaces or deletes only those; the factory's own mirror objects stay.
 * CatalogSources that pull their index by tag from a registry that has only digest mirrors would
 * not be mirrored at all, so they are reported in the plan and the log.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Mirror } from '../config/v1/schema.js';
import { VerificationError } from '../base/errors.js';
import type { Change, PlanResult } from '../engine/step.js';
import type { LegacySiteStep, StepContext } from '../config/site.js';
import { diffLines, MANAGED_BY, MANAGED_BY_LABEL, MANAGED_SELECTOR, managedLabels } from '../kube/openshift.js';
import { describeRef, refOf, type Kube, type KubeObject } from '../ports/kube.js';

export const IDMS = { apiVersion: 'config.openshift.io/v1', kind: 'ImageDigestMirrorSet' } as const;
export const ITMS = { apiVersion: 'config.openshift.io/v1', kind: 'ImageTagMirrorSet' } as const;
export const ICSP = { apiVersion: 'operator.openshift.io/v1alpha1', kind: 'ImageContentSourcePolicy' } as const;
const CATALOG_SOURCE = { apiVersion: 'operators.coreos.com/v1alpha1', kind: 'CatalogSource' } as const;
export const DIGEST_MIRRORS_NAME = 'sno-relocate-digest-mirrors';
export const TAG_MIRRORS_NAME = 'sno-relocate-tag-mirrors';

type MirrorObject = KubeObject & { spec?: Record<string, unknown> };

const mirrorEntries = (mirrors: readonly Mirror[]) =>
  mirrors.map((m) => ({
    source: m.source,
    mirrors: [...m.mirrors],
    ...(m.mirrorSourcePolicy && { mirrorSourcePolicy: m.mirrorSourcePolicy }),
  }));

const object = (
  kind: { apiVersion: string; kind: string },
  name: string,
  spec: Record<string, unknown>,
): MirrorObject => ({
  ...kind,
  metadata: { name, labels: { ...managedLabels } },
  spec,
});

/** The repository an image reference names, without tag or digest. */
function repositoryOf(image: string): string {
  const at = image.indexOf('@');
  if (at >= 0) return image.slice(0, at);
  const colon = image.lastIndexOf(':');
  return colon > image.lastIndexOf('/') ? image.slice(0, colon) : image;
}

const underSource = (repository: string, source: string) =>
  repository === source || repository.startsWith(`${source}/`);

/** CatalogSources whose index image is pulled by tag from a source that has only digest mirrors. */
export function unmirroredCatalogs(
  catalogs: readonly (KubeObject & { spec?: { image?: string } })[],
  digest: readonly Mirror[],
  tag: readonly Mirror[],
): string[] {
  const found: string[] = [];
  for (const c of catalogs) {
    const image = c.spec?.image;
    if (!image || image.includes('@')) continue;
    const repository = repositoryOf(image);
    if (digest.some((m) => underSource(repository, m.source)) && !tag.some((m) => underSource(repository, m.source))) {
      found.push(
        `CatalogSource ${c.metadata.namespace}/${c.metadata.name} pulls ${image} by tag, and ${repository} has only digest mirrors`,
      );
    }
  }
  return found;
}

interface Survey {
  wanted: MirrorObject[];
  /** the agent's objects the cluster holds now */
  owned: MirrorObject[];
  conflict?: string;
  warnings: string[];
}

const sameObject = (a: KubeObject, b: KubeObject) => a.kind === b.kind && a.metadata.name === b.metadata.name;

async function survey(ctx: StepContext, kube: Kube): Promise<Survey> {
  const { imageDigestMirrors: digest, imageTagMirrors: tag } = ctx.site;
  const [idms, itms, icsp] = await Promise.all([
    kube.serves(IDMS.apiVersion, IDMS.kind),
    kube.serves(ITMS.apiVersion, ITMS.kind),
    kube.serves(ICSP.apiVersion, ICSP.kind),
  ]);
  const wanted: MirrorObject[] = [];
  let conflict: string | undefined;
  if (digest.length > 0) {
    if (idms) wanted.push(object(IDMS, DIGEST_MIRRORS_NAME, { imageDigestMirrors: mirrorEntries(digest) }));
    else if (icsp)
      wanted.push(
        object(ICSP, DIGEST_MIRRORS_NAME, {
          repositoryDigestMirrors: digest.map((m) => ({ source: m.source, mirrors: [...m.mirrors] })),
        }),
      );
    else
      conflict =
        'the cluster serves neither ImageDigestMirrorSet (config.openshift.io/v1) nor ImageContentSourcePolicy (operator.openshift.io/v1alpha1): spec.imageDigestMirrors cannot be applied';
  }
  if (tag.length > 0) {
    if (itms) wanted.push(object(ITMS, TAG_MIRRORS_NAME, { imageTagMirrors: mirrorEntries(tag) }));
    else
      conflict = `the cluster does not serve ImageTagMirrorSet (config.openshift.io/v1, OpenShift 4.13 and later), and ImageContentSourcePolicy mirrors digests only: spec.imageTagMirrors (${tag.length}) cannot be applied`;
  }
  const owned = (
    await Promise.all(
      [IDMS, ITMS, ICSP].map((k) => kube.list<MirrorObject>(k.apiVersion, k.kind, { labelSelector: MANAGED_SELECTOR })),
    )
  ).flat();
  // an object of the agent's name it did not make is someone else's: never taken over silently
  for (const want of wanted.filter((w) => !owned.some((o) => sameObject(o, w)))) {
    if (await kube.get(refOf(want)))
      conflict ??= `${describeRef(refOf(want))} exists without the label ${MANAGED_BY_LABEL}=${MANAGED_BY}, so it is not the agent's: remove or rename it, or label it to hand it to the agent`;
  }
  const catalogs = await kube.list<KubeObject & { spec?: { image?: string } }>(
    CATALOG_SOURCE.apiVersion,
    CATALOG_SOURCE.kind,
  );
  return { wanted, owned, warnings: unmirroredCatalogs(catalogs, digest, tag), ...(conflict && { conflict }) };
}

function changesOf(s: Survey): Change[] {
  const changes: Change[] = [];
  for (const want of s.wanted) {
    const have = s.owned.find((o) => sameObject(o, want));
    if (!have)
      changes.push({
        action: 'create',
        target: describeRef(refOf(want)),
        diff: diffLines(undefined, want.spec, 'spec'),
      });
    else if (!isDeepStrictEqual(have.spec, want.spec))
      changes.push({
        action: 'update',
        target: describeRef(refOf(want)),
        diff: diffLines(have.spec, want.spec, 'spec'),
      });
  }
  for (const have of s.owned) {
    if (!s.wanted.some((w) => sameObject(w, have)))
      changes.push({
        action: 'delete',
        target: describeRef(refOf(have)),
        summary: 'the agent made it for mirrors the site no longer has',
      });
  }
  return changes;
}

function planOf(s: Survey): PlanResult {
  if (s.conflict) return { action: 'conflict', reason: s.conflict };
  const changes = changesOf(s);
  const warning = s.warnings.length > 0 ? `; warning: ${s.warnings.join('; ')}` : '';
  if (changes.length === 0) return { action: 'noop', reason: `the cluster already has the site's mirrors${warning}` };
  return { action: 'change', summary: `apply the site's registry mirrors${warning}`, changes };
}

export const mirrorsStep: LegacySiteStep = {
  name: 'mirrors',
  group: 'cluster',
  description: 'ImageDigestMirrorSet / ImageTagMirrorSet, or ImageContentSourcePolicy on older clusters',
  inputs: (site) => ({ digest: site.imageDigestMirrors, tag: site.imageTagMirrors }),

  async plan(ctx) {
    const s = await survey(ctx, await ctx.kube());
    for (const w of s.warnings) ctx.log.warn({ warning: w }, w);
    return planOf(s);
  },

  async apply(ctx) {
    const kube = await ctx.kube();
    const s = await survey(ctx, kube);
    // the new objects first, so the node is never left without mirrors between the two
    for (const want of s.wanted) {
      const have = s.owned.find((o) => sameObject(o, want));
      if (!have) await kube.create(want);
      else if (!isDeepStrictEqual(have.spec, want.spec)) {
        await kube.update<MirrorObject>(refOf(want), (current) => ({
          ...current,
          metadata: { ...current.metadata, labels: { ...current.metadata.labels, [MANAGED_BY_LABEL]: MANAGED_BY } },
          spec: want.spec!,
        }));
      }
    }
    for (const have of s.owned.filter((o) => !s.wanted.some((w) => sameObject(w, o)))) await kube.delete(refOf(have));
    ctx.log.info({ objects: s.wanted.map((w) => describeRef(refOf(w))) }, 'registry mirrors applied');
  },

  async verify(ctx) {
    const s = await survey(ctx, await ctx.kube());
    const left = changesOf(s);
    if (left.length > 0)
      throw new VerificationError(
        `mirrors: still to do after apply: ${left.map((c) => `${c.action} ${c.target}`).join('; ')}`,
        { step: 'mirrors', retryable: true },
      );
  },
};
