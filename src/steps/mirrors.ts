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
import type { Change, PlanResult } from '../engine/step.js';
import type { Step } from './step.js';
import { diffLines, MANAGED_BY, MANAGED_BY_LABEL, MANAGED_SELECTOR, managedLabels } from '../kube/openshift.js';
import { describeRef, refOf, type KubeObject, type ObjectRef } from '../ports/kube.js';

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

/** What the step reads: which mirror kinds the cluster serves, the objects there, and the catalogs. */
export interface MirrorsView {
  serves: { idms: boolean; itms: boolean; icsp: boolean };
  /** the agent's objects (its managed-by label) the cluster holds now */
  owned: MirrorObject[];
  /** objects of the agent's names the cluster holds without its label, by `kind/name` */
  foreign: string[];
  catalogs: (KubeObject & { spec?: { image?: string } })[];
}

interface Wanted {
  objects: MirrorObject[];
  conflict?: string;
}

const sameObject = (a: KubeObject, b: KubeObject) => a.kind === b.kind && a.metadata.name === b.metadata.name;

/** The objects the site's mirrors make on a cluster that serves these kinds. */
function wantedObjects(serves: MirrorsView['serves'], digest: readonly Mirror[], tag: readonly Mirror[]): Wanted {
  const objects: MirrorObject[] = [];
  let conflict: string | undefined;
  if (digest.length > 0) {
    if (serves.idms) objects.push(object(IDMS, DIGEST_MIRRORS_NAME, { imageDigestMirrors: mirrorEntries(digest) }));
    else if (serves.icsp)
      objects.push(
        object(ICSP, DIGEST_MIRRORS_NAME, {
          repositoryDigestMirrors: digest.map((m) => ({ source: m.source, mirrors: [...m.mirrors] })),
        }),
      );
    else
      conflict =
        'the cluster serves neither ImageDigestMirrorSet (config.openshift.io/v1) nor ImageContentSourcePolicy (operator.openshift.io/v1alpha1): spec.imageDigestMirrors cannot be applied';
  }
  if (tag.length > 0) {
    if (serves.itms) objects.push(object(ITMS, TAG_MIRRORS_NAME, { imageTagMirrors: mirrorEntries(tag) }));
    else
      conflict = `the cluster does not serve ImageTagMirrorSet (config.openshift.io/v1, OpenShift 4.13 and later), and ImageContentSourcePolicy mirrors digests only: spec.imageTagMirrors (${tag.length}) cannot be applied`;
  }
  return { objects, ...(conflict && { conflict }) };
}

/**
 * What apply does: the agent's objects created or updated, in this order, then those of mirrors the
 * site no longer has deleted, so the node is never left without mirrors between the two.
 */
export interface MirrorsDecision {
  write: { action: 'create' | 'update'; object: MirrorObject }[];
  delete: ObjectRef[];
}

function decide(wanted: readonly MirrorObject[], owned: readonly MirrorObject[]): MirrorsDecision {
  const write: MirrorsDecision['write'] = [];
  for (const want of wanted) {
    const have = owned.find((o) => sameObject(o, want));
    if (!have) write.push({ action: 'create', object: want });
    else if (!isDeepStrictEqual(have.spec, want.spec)) write.push({ action: 'update', object: want });
  }
  const gone = owned.filter((have) => !wanted.some((w) => sameObject(w, have))).map(refOf);
  return { write, delete: gone };
}

function changesOf(decision: MirrorsDecision, owned: readonly MirrorObject[]): Change[] {
  return [
    ...decision.write.map(({ action, object }) => ({
      action,
      target: describeRef(refOf(object)),
      diff: diffLines(owned.find((o) => sameObject(o, object))?.spec, object.spec, 'spec'),
    })),
    ...decision.delete.map((ref) => ({
      action: 'delete' as const,
      target: describeRef(ref),
      summary: 'the agent made it for mirrors the site no longer has',
    })),
  ];
}

export const mirrorsStep: Step<MirrorsView, MirrorsDecision> = {
  name: 'mirrors',
  group: 'cluster',
  description: 'ImageDigestMirrorSet / ImageTagMirrorSet, or ImageContentSourcePolicy on older clusters',
  inputs: (site) => ({ digest: site.imageDigestMirrors, tag: site.imageTagMirrors }),

  async survey(ctx) {
    const kube = await ctx.kube();
    const [idms, itms, icsp] = await Promise.all([
      kube.serves(IDMS.apiVersion, IDMS.kind),
      kube.serves(ITMS.apiVersion, ITMS.kind),
      kube.serves(ICSP.apiVersion, ICSP.kind),
    ]);
    const serves = { idms, itms, icsp };
    const owned = (
      await Promise.all(
        [IDMS, ITMS, ICSP].map((k) =>
          kube.list<MirrorObject>(k.apiVersion, k.kind, { labelSelector: MANAGED_SELECTOR }),
        ),
      )
    ).flat();
    const { objects } = wantedObjects(serves, ctx.site.imageDigestMirrors, ctx.site.imageTagMirrors);
    const foreign: string[] = [];
    for (const want of objects.filter((w) => !owned.some((o) => sameObject(o, w))))
      if (await kube.get(refOf(want))) foreign.push(describeRef(refOf(want)));
    const catalogs = await kube.list<KubeObject & { spec?: { image?: string } }>(
      CATALOG_SOURCE.apiVersion,
      CATALOG_SOURCE.kind,
    );
    return { serves, owned, foreign, catalogs };
  },

  plan(view, site): PlanResult<MirrorsDecision> {
    const wanted = wantedObjects(view.serves, site.imageDigestMirrors, site.imageTagMirrors);
    if (wanted.conflict) return { action: 'conflict', reason: wanted.conflict };
    // an object of the agent's name it did not make is someone else's: never taken over silently
    const foreign = view.foreign[0];
    if (foreign)
      return {
        action: 'conflict',
        reason: `${foreign} exists without the label ${MANAGED_BY_LABEL}=${MANAGED_BY}, so it is not the agent's: remove or rename it, or label it to hand it to the agent`,
      };
    const decision = decide(wanted.objects, view.owned);
    const changes = changesOf(decision, view.owned);
    const warnings = unmirroredCatalogs(view.catalogs, site.imageDigestMirrors, site.imageTagMirrors);
    const warning = warnings.length > 0 ? `; warning: ${warnings.join('; ')}` : '';
    const said = warnings.length > 0 ? { warnings } : {};
    if (changes.length === 0)
      return { action: 'noop', reason: `the cluster already has the site's mirrors${warning}`, ...said };
    return { action: 'change', summary: `apply the site's registry mirrors${warning}`, changes, decision, ...said };
  },

  async apply(ctx, decision) {
    const kube = await ctx.kube();
    for (const { action, object } of decision.write) {
      if (action === 'create') await kube.create(object);
      else
        // read-modify-write: the decision's spec and the agent's label onto the object as it is now
        await kube.update<MirrorObject>(refOf(object), (current) => ({
          ...current,
          metadata: { ...current.metadata, labels: { ...current.metadata.labels, [MANAGED_BY_LABEL]: MANAGED_BY } },
          spec: object.spec!,
        }));
    }
    for (const ref of decision.delete) await kube.delete(ref);
    ctx.log.info(
      {
        written: decision.write.map((w) => describeRef(refOf(w.object))),
        deleted: decision.delete.map(describeRef),
      },
      'registry mirrors applied',
    );
  },
};
