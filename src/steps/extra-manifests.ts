/**
 * [extra-manifests] The site's own objects (extra-manifests/, read and checked with the site-config)
 * applied in name order with server-side apply under the field manager `sno-relocate`. The plan asks
 * the API for a server-side dry run of each, so what would be created or changed, and what the API
 * would refuse, shows before anything is written; an object whose CustomResourceDefinition or
 * namespace another manifest brings cannot be dry-run yet and is planned as pending on it. Applying
 * waits (bounded) for each CRD to be Established and its kind served before the next manifest.
 * Only the manifests the plan lists are applied: one the dry run finds in place is left as it is.
 *
 * Before the first apply it waits, bounded by --health-timeout, until the openshift-apiserver runs
 * with ingress.config's apps domain (the site's, after the domain step): a Route it creates is then
 * given a host under the site's domain.
 *
 * Apply is forced: the site's signed manifests are the authority for the fields they name, and a
 * field another manager set before (a factory-time `kubectl apply`, an operator's default) would
 * otherwise stop the relocation at a site where nobody can resolve the conflict; forcing takes over
 * only the fields the manifest names, other managers keep theirs.
 *
 * A Secret's data never appears: its plan lines carry no diff, and its values are cut out of any
 * message the API sends back.
 */
import { isDeepStrictEqual } from 'node:util';
import { StepError } from '../base/errors.js';
import { crdFor, crdServes, type ExtraManifest, manifestAt } from '../config/extra-manifests.js';
import type { Step, StepContext } from './step.js';
import type { Change, PlanResult } from '../engine/step.js';
import { established, waitForCrd } from '../kube/crd.js';
import { diffLines, readIngressConfig } from '../kube/openshift.js';
import { openshiftApiServerUnsettled } from '../kube/openshift-apiserver.js';
import { REDACTED } from '../log/redact.js';
import { describeRef, type Kube, type KubeObject, refOf } from '../ports/kube.js';
import { awaitRollout } from '../kube/await-rollout.js';

const FORCE = true;

/** What one manifest would do to the cluster. */
interface Surveyed {
  manifest: ExtraManifest;
  /** the object the cluster holds now */
  current?: KubeObject;
  /** the object as the apply would leave it (dry run) */
  next?: KubeObject;
  /** why it cannot be dry-run yet: it waits for another manifest */
  pending?: string;
  /** why it cannot be applied */
  conflict?: string;
}

const isSecret = (o: KubeObject): boolean => o.apiVersion === 'v1' && o.kind === 'Secret';

/** The message with every value of a Secret manifest (as written and base64-decoded) cut out. */
function withoutSecretValues(message: string, object: KubeObject): string {
  if (!isSecret(object)) return message;
  const values: string[] = [];
  for (const field of ['data', 'stringData'] as const) {
    const entries = object[field];
    if (!entries || typeof entries !== 'object') continue;
    for (const v of Object.values(entries as Record<string, unknown>)) {
      if (typeof v !== 'string' || v === '') continue;
      values.push(v);
      if (field === 'data') values.push(Buffer.from(v, 'base64').toString('utf8'));
    }
  }
  return values
    .filter((v) => v.length > 0)
    .sort((a, b) => b.length - a.length)
    .reduce((text, v) => text.split(v).join(REDACTED), message);
}

/** The object without what the API server keeps for itself: what an apply changes, and a plan shows. */
function content(obj: KubeObject): Record<string, unknown> {
  const { status: _status, ...rest } = obj;
  const {
    managedFields: _managedFields,
    resourceVersion: _resourceVersion,
    uid: _uid,
    creationTimestamp: _creationTimestamp,
    generation: _generation,
    selfLink: _selfLink,
    ...metadata
  } = obj.metadata as KubeObject['metadata'] & Record<string, unknown>;
  return { ...rest, metadata };
}

/** The StepError's message, naming the manifest, with a Secret's values cut out. */
const refusal = (m: ExtraManifest, err: StepError): string =>
  `${manifestAt(m)}: ${withoutSecretValues(err.message, m.object)}`;

/** how many times the two reads of one object are made again when it changed between them */
const CONSISTENT_READS = 5;

/**
 * The server's dry run of the manifest and the object as it is, both of the same version of it: a
 * write between the two reads (a controller's, a server's default set after the create) would show
 * as a change the apply did not make, so they are read again.
 */
async function dryRunAndCurrent(kube: Kube, object: KubeObject): Promise<{ next: KubeObject; current?: KubeObject }> {
  for (let attempt = 1; ; attempt++) {
    const next = await kube.apply(object, { force: FORCE, dryRun: true });
    const current = await kube.get(refOf(next));
    const read = (o: KubeObject | undefined) => o?.metadata.resourceVersion || undefined;
    if (read(next) === read(current) || attempt === CONSISTENT_READS) return { next, ...(current && { current }) };
  }
}

async function survey(ctx: StepContext, kube: Kube): Promise<Surveyed[]> {
  const manifests = ctx.site.extraManifests;
  const namespaces = new Map<string, boolean>();
  const namespaceExists = async (name: string) => {
    if (!namespaces.has(name))
      namespaces.set(name, (await kube.get({ apiVersion: 'v1', kind: 'Namespace', name })) !== undefined);
    return namespaces.get(name)!;
  };
  const out: Surveyed[] = [];
  for (const [i, manifest] of manifests.entries()) {
    const { object } = manifest;
    const before = manifests.slice(0, i);
    if (!(await kube.serves(object.apiVersion, object.kind, { fresh: true }))) {
      const crd = crdFor(object, before);
      out.push(
        crd
          ? { manifest, pending: `once ${manifestAt(crd)} (${crd.object.metadata.name}) is established` }
          : {
              manifest,
              conflict: `${manifestAt(manifest)}: the cluster does not serve ${object.apiVersion} ${object.kind}, and no extra manifest before it installs that kind`,
            },
      );
      continue;
    }
    const namespace = object.metadata.namespace;
    if (namespace !== undefined && !(await namespaceExists(namespace))) {
      const creator = before.find(
        (m) => m.object.apiVersion === 'v1' && m.object.kind === 'Namespace' && m.object.metadata.name === namespace,
      );
      if (creator) {
        out.push({ manifest, pending: `in namespace ${namespace}, which ${manifestAt(creator)} creates` });
        continue;
      }
    }
    try {
      out.push({ manifest, ...(await dryRunAndCurrent(kube, object)) });
    } catch (err) {
      // the API refused it: a transient failure goes up and the step is tried again
      if (!(err instanceof StepError) || err.retryable) throw err;
      out.push({ manifest, conflict: `${refusal(manifest, err)}` });
    }
  }
  return out;
}

function changeOf(s: Surveyed): Change | undefined {
  const { manifest } = s;
  const target = describeRef(refOf(s.next ?? manifest.object));
  const at = manifestAt(manifest);
  const secret = isSecret(manifest.object) ? '; a Secret: its data is not shown' : '';
  if (s.pending) return { action: 'apply', target, summary: `${at}: ${s.pending}${secret}` };
  if (!s.next) return undefined;
  const after = content(s.next);
  const before = s.current && content(s.current);
  if (before && isDeepStrictEqual(before, after)) {
    // in place, but a CRD the API does not serve yet is still waited for
    if (crdServes(manifest.object) && !established(s.current))
      return { action: 'apply', target, summary: `${at}: wait until it is established` };
    return undefined;
  }
  return {
    action: before ? 'update' : 'create',
    target,
    summary: `${at}${secret}`,
    ...(!secret && { diff: diffLines(before, after) }),
  };
}

/** What apply does: the manifests the plan lists, in name order, each applied and its CRD waited for. */
export interface ExtraManifestsDecision {
  /**
   * the apps domain the openshift-apiserver must run with before the first apply: a Route created
   * while it still rolls out for the domain step's appsDomain would get a host under the factory's
   * domain, which nothing moves later (src/kube/openshift-apiserver.ts)
   */
  awaitAppsDomain?: string;
  /** a manifest's object may be a Secret: the decision is never shown */
  apply: { manifest: ExtraManifest; awaitCrd?: { name: string; serves?: { apiVersion: string; kind: string } } }[];
}

/** The CRD a manifest installs, and the kind its first served version serves, to wait for. */
function crdWait(object: KubeObject): ExtraManifestsDecision['apply'][number]['awaitCrd'] {
  const serves = crdServes(object);
  if (!serves) return undefined;
  const version = (object.spec as { versions?: { name?: string; served?: boolean }[] }).versions?.find(
    (v) => v.served !== false,
  )?.name;
  return {
    name: object.metadata.name,
    ...(version && { serves: { apiVersion: `${serves.group}/${version}`, kind: serves.kind } }),
  };
}

function planOf({ manifests: surveyed, appsDomain }: ExtraManifestsView): PlanResult<ExtraManifestsDecision> {
  const conflicts = surveyed.flatMap((s) => (s.conflict ? [s.conflict] : []));
  if (conflicts.length > 0) return { action: 'conflict', reason: conflicts.join('; ') };
  const listed = surveyed.flatMap((s) => {
    const change = changeOf(s);
    return change ? [{ change, manifest: s.manifest }] : [];
  });
  if (surveyed.length === 0) return { action: 'noop', reason: 'the site-config has no extra manifests' };
  if (listed.length === 0)
    return { action: 'noop', reason: `the cluster already holds the ${surveyed.length} extra manifest(s)` };
  return {
    action: 'change',
    summary: `server-side apply of ${listed.length} of the ${surveyed.length} extra manifest(s)`,
    changes: listed.map((l) => l.change),
    decision: {
      ...(appsDomain && { awaitAppsDomain: appsDomain }),
      apply: listed.map(({ manifest }) => {
        const awaitCrd = crdWait(manifest.object);
        return { manifest, ...(awaitCrd && { awaitCrd }) };
      }),
    },
  };
}

/**
 * What the step reads: each manifest's object on the cluster and the server's dry run of it, and
 * ingress.config's apps domain (the site's, after the domain step).
 */
export interface ExtraManifestsView {
  manifests: Surveyed[];
  appsDomain?: string;
}

export const extraManifestsStep: Step<ExtraManifestsView, ExtraManifestsDecision> = {
  name: 'extra-manifests',
  group: 'cluster',
  description:
    "after the openshift-apiserver's rollout, the site's extra-manifests/ applied in name order (server-side apply, every document of a file); waits for the CRDs they install",
  inputs: (site) => site.extraManifests,

  async survey(ctx) {
    if (ctx.site.extraManifests.length === 0) return { manifests: [] };
    const kube = await ctx.kube();
    const ingress = (await readIngressConfig(kube)).spec;
    const appsDomain = ingress?.appsDomain || ingress?.domain;
    return { manifests: await survey(ctx, kube), ...(appsDomain && { appsDomain }) };
  },

  plan: planOf,

  async apply(ctx, decision) {
    const kube = await ctx.kube();
    const apps = decision.awaitAppsDomain;
    if (apps) await awaitRollout(ctx, 'extra-manifests', () => openshiftApiServerUnsettled(kube, apps));
    for (const { manifest, awaitCrd } of decision.apply) {
      let applied: KubeObject;
      try {
        applied = await kube.apply(manifest.object, { force: FORCE });
      } catch (err) {
        if (!(err instanceof StepError)) throw err;
        throw new StepError(refusal(manifest, err), { step: 'extra-manifests', retryable: err.retryable, cause: err });
      }
      ctx.log.info({ manifest: manifestAt(manifest), target: describeRef(refOf(applied)) }, 'extra manifest applied');
      if (awaitCrd) await waitForCrd(kube, ctx.clock, awaitCrd.name, awaitCrd.serves);
    }
  },
};
