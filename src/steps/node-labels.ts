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
import type { Step } from './step.js';
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

/** What apply does: one merge patch of the Node, once kubelet has registered it. */
export interface NodeLabelsDecision {
  node: string;
  /** the Node was not registered when surveyed: apply waits for kubelet to register it first */
  awaitRegistration: boolean;
  /** the labels to set (key -> value) and to remove (key -> null): a JSON merge patch of metadata.labels */
  labels: Record<string, string | null>;
  /** the annotation's value once the patch is in */
  owned: string;
}

const ownedKeys = (node: KubeObject | undefined): string[] =>
  (node?.metadata.annotations?.[OWNED_LABELS_ANNOTATION] ?? '').split(',').filter((k) => k !== '');

function decide(
  name: string,
  node: KubeObject,
  want: Record<string, string>,
): { decision: NodeLabelsDecision; changes: Change[] } {
  const current = node.metadata.labels ?? {};
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
  return { decision: { node: name, awaitRegistration: false, labels, owned }, changes };
}

const nodeRef = (name: string) => ({ apiVersion: 'v1', kind: 'Node', name });

export const nodeLabelsStep: Step<NodeLabelsView, NodeLabelsDecision> = {
  name: 'node-labels',
  group: 'cluster',
  description: "the site's labels on this node's Node object; labels the agent did not set are never removed",
  inputs: (site) => ({ nodeLabels: site.nodeLabels, hostname: site.hostname ?? null }),

  async survey(ctx) {
    // without labels of its own the step leaves the Node alone, registered or not
    if (Object.keys(ctx.site.nodeLabels).length === 0) return { name: '' };
    const name = await registeredNodeName(ctx.fs);
    const node = await (await ctx.kube()).get(nodeRef(name));
    return { name, ...(node && { node }) };
  },

  plan(view, site): PlanResult<NodeLabelsDecision> {
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
        // a Node kubelet registers anew carries no label of an earlier site-config
        decision: {
          node: view.name,
          awaitRegistration: true,
          labels: site.nodeLabels,
          owned: Object.keys(site.nodeLabels).sort().join(','),
        },
      };
    const { decision, changes } = decide(view.name, view.node, site.nodeLabels);
    if (changes.length === 0) return { action: 'noop', reason: `Node ${view.name} carries the site's labels` };
    return { action: 'change', summary: `label Node ${view.name} for the site`, changes, decision };
  },

  async apply(ctx, decision) {
    const kube = await ctx.kube();
    const { node, labels, owned } = decision;
    // kubelet registers the Node moments after its client certificate is approved
    if (
      decision.awaitRegistration &&
      !(await pollUntil(ctx.clock, () => kube.get(nodeRef(node)), {
        timeoutMs: ctx.options.healthTimeoutSeconds * 1000,
        intervalMs: 1000,
        maxIntervalMs: 5000,
      }))
    )
      throw new VerificationError(
        `node-labels: Node ${node || '(this host)'} not registered after ${ctx.options.healthTimeoutSeconds}s`,
        { step: 'node-labels', retryable: true },
      );
    // one merge patch: the labels and the record of them change together
    await kube.mergePatch(nodeRef(node), {
      metadata: { labels, annotations: { [OWNED_LABELS_ANNOTATION]: owned || null } },
    });
    ctx.log.info({ node, labels: Object.keys(labels) }, `Node ${node} labelled for the site`);
  },
};
