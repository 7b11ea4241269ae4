/**
 * [old-node] A node that comes back under a new hostname registers a new Node; the Node it had in
 * the factory stays NotReady, and the pods bound to it are not collected until it is deleted. Once
 * the new Node is Ready (its requests approved by csr-approval), the agent deletes the old one, and
 * only a Node that carries this machine's identity: the machine-id of /etc/machine-id, or the
 * system UUID of /sys/class/dmi/id/product_uuid, in its status.nodeInfo. A Node of another machine
 * is never touched, whatever its name or state.
 */
import { VerificationError } from '../base/errors.js';
import type { Step, StepContext } from '../config/site.js';
import { readStaticHostname } from '../node/hostname.js';
import { pollUntil } from '../ports/clock.js';
import type { KubeObject } from '../ports/kube.js';

type NodeObject = KubeObject & {
  status?: {
    nodeInfo?: { machineID?: string; systemUUID?: string };
    conditions?: { type: string; status: string }[];
  };
};

export const MACHINE_ID_FILE = '/etc/machine-id';
export const PRODUCT_UUID_FILE = '/sys/class/dmi/id/product_uuid';

interface Identity {
  machineID?: string;
  systemUUID?: string;
}

async function machineIdentity(ctx: StepContext): Promise<Identity> {
  const read = async (file: string) => (await ctx.fs.readText(file).catch(() => undefined))?.trim() || undefined;
  const machineID = await read(MACHINE_ID_FILE);
  const systemUUID = (await read(PRODUCT_UUID_FILE))?.toLowerCase();
  return { ...(machineID && { machineID }), ...(systemUUID && { systemUUID }) };
}

/** Which of this machine's marks the Node carries; empty when it is another machine's. */
export function sharedIdentity(node: NodeObject, me: Identity): string[] {
  const info = node.status?.nodeInfo ?? {};
  const out: string[] = [];
  if (me.machineID && info.machineID === me.machineID) out.push(`machine-id ${me.machineID}`);
  if (me.systemUUID && info.systemUUID?.toLowerCase() === me.systemUUID) out.push(`system UUID ${me.systemUUID}`);
  return out;
}

const isReady = (node: NodeObject | undefined) =>
  node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** What the step reads: this node's name and machine identity, and the cluster's Nodes. */
export interface OldNodeView {
  name: string;
  me: Identity;
  nodes: NodeObject[];
}

/** The Nodes other than this one that carry this machine's identity, with the marks they share. */
const formerNodes = (view: OldNodeView) =>
  view.nodes
    .filter((n) => n.metadata.name !== view.name)
    .map((node) => ({ node, marks: sharedIdentity(node, view.me) }))
    .filter((x) => x.marks.length > 0);

export const oldNodeStep: Step<OldNodeView> = {
  name: 'old-node',
  group: 'cluster',
  description: 'the Node this machine had under its factory hostname deleted, once the new one is Ready',
  inputs: (site) => ({ hostname: site.hostname ?? null }),

  async survey(ctx) {
    const name = ctx.site.hostname ?? (await readStaticHostname(ctx.fs));
    const me = await machineIdentity(ctx);
    const nodes = await (await ctx.kube()).list<NodeObject>('v1', 'Node');
    return { name, me, nodes };
  },

  plan(view) {
    if (!view.me.machineID && !view.me.systemUUID)
      return { action: 'noop', reason: 'this machine has no machine-id or system UUID to know its Node by' };
    const old = formerNodes(view);
    if (old.length === 0) return { action: 'noop', reason: `no Node other than ${view.name} is this machine's` };
    return {
      action: 'change',
      summary: `delete this machine's former Node once ${view.name} is Ready`,
      changes: old.map((x) => ({
        action: 'delete',
        target: `Node ${x.node.metadata.name}`,
        summary: `same ${x.marks.join(' and ')} as this machine; deleted after Node ${view.name} is Ready`,
      })),
    };
  },

  async apply(ctx, view) {
    const kube = await ctx.kube();
    const timeoutMs = ctx.options.healthTimeoutSeconds * 1000;
    // the former Node goes only once this one is Ready: until then it is all the cluster has
    const ready = await pollUntil(
      ctx.clock,
      async () =>
        isReady(await kube.get<NodeObject>({ apiVersion: 'v1', kind: 'Node', name: view.name })) ? true : undefined,
      { timeoutMs, intervalMs: 1000, maxIntervalMs: 5000 },
    );
    if (!ready)
      throw new VerificationError(
        `old-node: Node ${ctx.site.hostname ?? '(this host)'} not Ready after ${ctx.options.healthTimeoutSeconds}s; the former Node is kept until it is`,
        { step: 'old-node', retryable: true },
      );
    for (const x of formerNodes(view)) {
      await kube.delete({ apiVersion: 'v1', kind: 'Node', name: x.node.metadata.name });
      ctx.log.info(
        { node: x.node.metadata.name, marks: x.marks },
        `Node ${x.node.metadata.name} deleted: this machine's former Node`,
      );
    }
  },
};
