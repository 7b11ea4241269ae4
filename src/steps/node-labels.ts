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
import type { Step, StepContext } from './step.js';
import type { Change, PlanResult } from '../engine/step.js';
import { registeredNodeName } from '../node/node-name.js';
import { pollUntil } from '../ports/clock.js';
import type { KubeObject } from '../ports/kube.js';

/** the label keys the agent set on the Node, comma separated, sorted */
export const OWNED_LABELS_ANNOTATION = 'sno-relocate.openshift.io/node-labels';

/** What the step reads: this node's name and its Node, absent until kubelet has registered it. */
export interface NodeLabelsView {
  name: string;
  node?: KubeObject;
}

interface Decision {
  /** the labels to set (key -> value) and to remove (key -> null): a JSON merge patch of metadata.labels */
  labels: Record<string, string | null>;
  changes: Change[];
  /** the annotation's value once the patch is in */
  owned: string;
}

const ownedKeys = (node: KubeObject | undefined): string[] =>
  (node?.metadata.annotations?.[OWNED_LABELS_ANNOTATION] ?? '').split(',').filter((k) => k !== '');

function decide(name: string, node: KubeObject | undefined, want: Record<string, string>): Decision {
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
  return { labels, changes, owned };
}

async function readNode(ctx: StepContext): Promise<NodeLabelsView> {
  const name = await registeredNodeName(ctx.fs);
  const node = await (await ctx.kube()).get({ apiVersion: 'v1', kind: 'Node', name });
  return { name, ...(node && { node }) };
}

export const nodeLabelsStep: Step<NodeLabelsView> = {
  name: 'node-labels',
  group: 'cluster',
  description: "the site's labels on this node's Node object; labels the agent did not set are never removed",
  inputs: (site) => ({ nodeLabels: site.nodeLabels, hostname: site.hostname ?? null }),

  async survey(ctx) {
    // without labels of its own the step leaves the Node alone, registered or not
    if (Object.keys(ctx.site.nodeLabels).length === 0) return { name: '' };
    return readNode(ctx);
  },

  plan(view, site): PlanResult {
    if (Object.keys(site.nodeLabels).length === 0)
      return { action: 'noop', reason: 'the site-config sets no node labels (any an earlier one set stay)' };
    if (!view.node)
      return {
        action: 'change',
        summary: `label Node ${view.name} once kubelet has registered it`,
        changes: Object.entries(site.nodeLabels).map(([key, value]) => ({
          action: 'set',
          target: `Node ${view.name} label ${key}`,
          summary: JSON.stringify(value),
        })),
      };
    const { changes } = decide(view.name, view.node, site.nodeLabels);
    if (changes.length === 0) return { action: 'noop', reason: `Node ${view.name} carries the site's labels` };
    return { action: 'change', summary: `label Node ${view.name} for the site`, changes };
  },

  async apply(ctx, view) {
    // kubelet registers the Node moments after its client certificate is approved; a Node that was
    // not there when surveyed is read once it is, and its labels decide the patch
    const found =
      view.node !== undefined
        ? view
        : await pollUntil(
            ctx.clock,
            async () => {
              const now = await readNode(ctx);
              return now.node ? now : undefined;
            },
            { timeoutMs: ctx.options.healthTimeoutSeconds * 1000, intervalMs: 1000, maxIntervalMs: 5000 },
          );
    if (!found)
      throw new VerificationError(
        `node-labels: Node ${view.name || '(this host)'} not registered after ${ctx.options.healthTimeoutSeconds}s`,
        { step: 'node-labels', retryable: true },
      );
    const { labels, owned } = decide(found.name, found.node, ctx.site.nodeLabels);
    // one merge patch: the labels and the record of them change together
    await (
      await ctx.kube()
    ).mergePatch(
      { apiVersion: 'v1', kind: 'Node', name: found.name },
      { metadata: { labels, annotations: { [OWNED_LABELS_ANNOTATION]: owned || null } } },
    );
    ctx.log.info({ node: found.name, labels: Object.keys(labels) }, `Node ${found.name} labelled for the site`);
  },
};
