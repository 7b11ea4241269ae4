/**
 * [node-labels] The site's labels on this node's Node object (spec.nodeLabels, the image-based
 * install's node_labels). lifecycle-agent's post-pivot merge-patches them onto the node once it is
 * registered; so does this step, and it also remembers which keys it set, in an annotation on the
 * Node, so that a later site-config without a label takes away only a label the agent put there.
 * A label it did not set (the installer's role labels, an operator's, an administrator's) is never
 * removed, and is overwritten only when the site-config names the same key. A site-config without
 * node labels leaves the Node alone.
 *
 * The Node is the one kubelet registers (src/node/node-name.ts: the name node-name pinned): after
 * csr-approval and node-identity it is registered, and it is the only Node this machine has.
 */
import { VerificationError } from '../base/errors.js';
import type { LegacySiteStep, StepContext } from '../config/site.js';
import type { Change, PlanResult } from '../engine/step.js';
import { registeredNodeName } from '../node/node-name.js';
import { pollUntil } from '../ports/clock.js';
import type { Kube, KubeObject } from '../ports/kube.js';

/** the label keys the agent set on the Node, comma separated, sorted */
export const OWNED_LABELS_ANNOTATION = 'sno-relocate.openshift.io/node-labels';

interface Survey {
  kube: Kube;
  name: string;
  node?: KubeObject;
  /** the labels to set (key -> value) and to remove (key -> null): a JSON merge patch of metadata.labels */
  labels: Record<string, string | null>;
  changes: Change[];
  /** the annotation's value once the patch is in */
  owned: string;
}

const ownedKeys = (node: KubeObject | undefined): string[] =>
  (node?.metadata.annotations?.[OWNED_LABELS_ANNOTATION] ?? '').split(',').filter((k) => k !== '');

async function survey(ctx: StepContext): Promise<Survey> {
  const kube = await ctx.kube();
  const name = await registeredNodeName(ctx.fs);
  const node = await kube.get({ apiVersion: 'v1', kind: 'Node', name });
  const want = ctx.site.nodeLabels;
  const current = node?.metadata.labels ?? {};
  const labels: Record<string, string | null> = {};
  const changes: Change[] = [];
  for (const [key, value] of Object.entries(want)) {
    if (current[key] === value) continue;
    labels[key] = value;
    changes.push({
      action: key in current ? 'update' : 'set',
      target: `Node ${name} label ${key}`,
      summary: key in current ? `${JSON.stringify(current[key])} -> ${JSON.stringify(value)}` : JSON.stringify(value),
    });
  }
  for (const key of ownedKeys(node)) {
    if (key in want || !(key in current)) continue;
    labels[key] = null;
    changes.push({
      action: 'delete',
      target: `Node ${name} label ${key}`,
      summary: 'set by an earlier site-config, not by this one',
    });
  }
  const owned = Object.keys(want).sort().join(',');
  if (changes.length === 0 && ownedKeys(node).join(',') !== owned)
    changes.push({ action: 'update', target: `Node ${name}`, summary: `the record of the labels the agent set` });
  return { kube, name, ...(node && { node }), labels, changes, owned };
}

export const nodeLabelsStep: LegacySiteStep = {
  name: 'node-labels',
  group: 'cluster',
  description: "the site's labels on this node's Node object; labels the agent did not set are never removed",
  inputs: (site) => ({ nodeLabels: site.nodeLabels, hostname: site.hostname ?? null }),

  async plan(ctx): Promise<PlanResult> {
    if (Object.keys(ctx.site.nodeLabels).length === 0)
      return { action: 'noop', reason: 'the site-config sets no node labels (any an earlier one set stay)' };
    const s = await survey(ctx);
    if (!s.node)
      return {
        action: 'change',
        summary: `label Node ${s.name} once kubelet has registered it`,
        changes: Object.entries(ctx.site.nodeLabels).map(([key, value]) => ({
          action: 'set',
          target: `Node ${s.name} label ${key}`,
          summary: JSON.stringify(value),
        })),
      };
    if (s.changes.length === 0) return { action: 'noop', reason: `Node ${s.name} carries the site's labels` };
    return { action: 'change', summary: `label Node ${s.name} for the site`, changes: s.changes };
  },

  async apply(ctx) {
    // kubelet registers the Node moments after its client certificate is approved
    const registered = async () => {
      const found = await survey(ctx);
      return found.node ? found : undefined;
    };
    const s = await pollUntil(ctx.clock, registered, {
      timeoutMs: ctx.options.healthTimeoutSeconds * 1000,
      intervalMs: 1000,
      maxIntervalMs: 5000,
    });
    if (!s)
      throw new VerificationError(
        `node-labels: Node ${ctx.site.hostname ?? '(this host)'} not registered after ${ctx.options.healthTimeoutSeconds}s`,
        { step: 'node-labels', retryable: true },
      );
    // one merge patch: the labels and the record of them change together
    await s.kube.mergePatch(
      { apiVersion: 'v1', kind: 'Node', name: s.name },
      { metadata: { labels: s.labels, annotations: { [OWNED_LABELS_ANNOTATION]: s.owned || null } } },
    );
    ctx.log.info({ node: s.name, labels: Object.keys(s.labels) }, `Node ${s.name} labelled for the site`);
  },

  async verify(ctx) {
    // without labels of its own the step leaves the Node alone, registered or not
    if (Object.keys(ctx.site.nodeLabels).length === 0) return;
    const s = await survey(ctx);
    if (!s.node || s.changes.length > 0)
      throw new VerificationError(
        `node-labels: Node ${s.name}: ${s.node ? `still to do: ${s.changes.map((c) => c.target).join('; ')}` : 'not registered'}`,
        { step: 'node-labels', retryable: true },
      );
  },
};
