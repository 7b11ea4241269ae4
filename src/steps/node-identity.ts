/**
 * [node-identity] The Node after kubelet registered it. It carries the site's OS hostname in an
 * annotation (sno-relocate.openshift.io/site-hostname), so fleet tools can show it beside the node
 * name the Node keeps.
 *
 * After a rename (node-rename recorded the former name), as soon as the new Node object exists and
 * without waiting for it to be Ready (the OVN control plane's pod stays bound to the former Node,
 * which it tolerates unreachable forever, so the new Node gets no subnet and is never Ready while
 * the former exists: test/cluster/models/ovn-control-plane.ts), in this order:
 * - the former Node's labels and taints onto the new one (the machine-config controller would
 *   otherwise take the master taint off and add the worker label: models/machine-config-controller.ts);
 * - the etcd secrets etcd-{peer,serving,serving-metrics}-<former> copied under the new name and
 *   their keys added to etcd-all-certs (their SANs are addresses only, so they serve the new name);
 * - status.nodeStatuses renamed in the four static-pod operators' resources, revisions kept, so no
 *   installer runs a revision that does not know the new name (models/etcd-operator.ts);
 * - the former Node deleted: its pods are collected and land on the new Node.
 */
import { VerificationError } from '../base/errors.js';
import type { Step, StepContext } from './step.js';
import type { Change, PlanResult } from '../engine/step.js';
import { registeredNodeName, SITE_HOSTNAME_ANNOTATION } from '../node/node-name.js';
import { OPERATOR_API, STATIC_POD_OPERATORS, type NodeStatus } from '../node/rename-preflight.js';
import { readRenameRecord, type RenameRecord } from '../node/rename.js';
import { pollUntil } from '../ports/clock.js';
import type { Kube, KubeObject } from '../ports/kube.js';

const ETCD_NAMESPACE = 'openshift-etcd';
const ETCD_SECRETS = ['etcd-peer', 'etcd-serving', 'etcd-serving-metrics'];
const ALL_CERTS = 'etcd-all-certs';
/** labels kubelet sets itself from its own name */
const KUBELET_OWNED_LABELS = new Set(['kubernetes.io/hostname']);

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}
type NodeObject = KubeObject & { spec?: { taints?: Taint[] } };
type Secret = KubeObject & { data?: Record<string, string>; type?: string };
type Operator = KubeObject & { status?: { nodeStatuses?: NodeStatus[] } };

/** What the step reads: the Node under its registered name, and after a rename the former Node. */
export interface NodeIdentityView {
  name: string;
  node?: NodeObject;
  rename?: RenameRecord & {
    former?: NodeObject;
    /** the operators whose nodeStatuses still name the former Node */
    operators: string[];
    /** etcd secrets of the former name that have no copy under the new one */
    secrets: string[];
  };
}

/** What apply does, in this order, once the Node exists. */
export interface NodeIdentityDecision {
  /** the Node waited for: kubelet registers it moments after its client certificate is approved */
  node: string;
  /** after a rename: what moves from the former name to the new one */
  rename?: {
    from: string;
    to: string;
    /**
     * the former Node's labels (kubelet's own left out) and role taints, merged into the new Node
     * as it is then; absent when the former Node is gone
     */
    carry?: { labels: Record<string, string>; taints: Taint[] };
    /** etcd secrets `<secret>-<from>` copied to `<secret>-<to>`, their keys added to etcd-all-certs */
    secrets: string[];
    /** the static-pod operators whose status.nodeStatuses name the former Node */
    operators: string[];
    /** the former Node, deleted last */
    deleteFormer: boolean;
  };
  /** the site hostname the Node's annotation names; absent when the site-config sets none */
  hostname?: string;
}

const nodeRef = (name: string) => ({ apiVersion: 'v1', kind: 'Node', name });

async function survey(ctx: StepContext): Promise<NodeIdentityView> {
  const kube = await ctx.kube();
  const name = await registeredNodeName(ctx.fs);
  const node = await kube.get<NodeObject>(nodeRef(name));
  const view: NodeIdentityView = { name, ...(node && { node }) };
  const record = await readRenameRecord(ctx.fs, ctx.stateDir);
  if (!record || record.to !== name || record.from === name) return view;
  // independent reads, asked together rather than one round trip after another
  const secretRef = (s: string, n: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    namespace: ETCD_NAMESPACE,
    name: `${s}-${n}`,
  });
  const [former, operators, secrets] = await Promise.all([
    kube.get<NodeObject>(nodeRef(record.from)),
    Promise.all(
      STATIC_POD_OPERATORS.map(async (kind) => {
        const o = await kube.get<Operator>({ apiVersion: OPERATOR_API, kind, name: 'cluster' });
        return o?.status?.nodeStatuses?.some((n) => n.nodeName === record.from) ? [kind] : [];
      }),
    ).then((found) => found.flat()),
    Promise.all(
      ETCD_SECRETS.map(async (s) => {
        const [from, to] = await Promise.all([kube.get(secretRef(s, record.from)), kube.get(secretRef(s, record.to))]);
        return from && !to ? [s] : [];
      }),
    ).then((found) => found.flat()),
  ]);
  view.rename = { ...record, ...(former && { former }), operators, secrets };
  return view;
}

/** taints the node lifecycle controller and kubelet keep by the Node's state, not its role */
const isLifecycleTaint = (t: Taint) => t.key.startsWith('node.kubernetes.io/');
const sameTaint = (a: Taint, b: Taint) => a.key === b.key && a.effect === b.effect && a.value === b.value;

const role = (list: Taint[]) => list.filter((t) => !isLifecycleTaint(t));

/** What the new Node takes of the former: its labels but kubelet's own, and its role taints. */
const carriedOf = (former: NodeObject) => ({
  labels: Object.fromEntries(
    Object.entries(former.metadata.labels ?? {}).filter(([k]) => !KUBELET_OWNED_LABELS.has(k)),
  ),
  taints: role(former.spec?.taints ?? []),
});

/**
 * The new Node with what it takes of the former: the labels it lacks, and the former's taints in
 * place of the ones kubelet registered it with (the master NoSchedule taint the machine-config
 * controller had taken off the former), the lifecycle taints left as they are.
 */
function carried(
  carry: NonNullable<NonNullable<NodeIdentityDecision['rename']>['carry']>,
  node: NodeObject | undefined,
) {
  const have = node?.metadata.labels ?? {};
  const labels = Object.fromEntries(Object.entries(carry.labels).filter(([k, v]) => have[k] !== v));
  const current = node?.spec?.taints ?? [];
  const taintsDiffer =
    carry.taints.length !== role(current).length ||
    carry.taints.some((t) => !role(current).some((x) => sameTaint(t, x)));
  const taints = [...current.filter(isLifecycleTaint), ...carry.taints];
  return { labels, taints, taintsDiffer };
}

function renameChanges(v: NodeIdentityView, carry: ReturnType<typeof carriedOf> | undefined): Change[] {
  const r = v.rename!;
  const out: Change[] = [];
  if (carry) {
    const { labels, taints, taintsDiffer } = carried(carry, v.node);
    for (const k of Object.keys(labels))
      out.push({ action: 'set', target: `Node ${v.name} label ${k}`, summary: `from Node ${r.from}` });
    if (taintsDiffer)
      out.push({
        action: 'set',
        target: `Node ${v.name} taints`,
        summary: `as on Node ${r.from}: ${taints.map((t) => `${t.key}:${t.effect}`).join(', ') || 'none'}`,
      });
  }
  for (const s of r.secrets)
    out.push({
      action: 'create',
      target: `Secret ${ETCD_NAMESPACE}/${s}-${r.to}`,
      summary: `copy of ${s}-${r.from}, keys added to ${ALL_CERTS}`,
    });
  for (const kind of r.operators)
    out.push({
      action: 'update',
      target: `${kind} cluster`,
      summary: `status.nodeStatuses ${r.from} -> ${r.to}, revisions kept`,
    });
  if (r.former)
    out.push({ action: 'delete', target: `Node ${r.from}`, summary: `the former Node, once ${r.to} exists` });
  return out;
}

export const nodeIdentityStep: Step<NodeIdentityView, NodeIdentityDecision> = {
  name: 'node-identity',
  group: 'cluster',
  description:
    "the site hostname as an annotation on the Node; after a rename, the former Node's labels, taints, etcd secrets and operator node statuses moved to the new name and the former Node deleted",
  inputs: (site) => ({ hostname: site.hostname ?? null, nodeName: site.nodeName ?? 'keep' }),
  survey,

  plan(v, site): PlanResult<NodeIdentityDecision> {
    const carry = v.rename?.former && carriedOf(v.rename.former);
    const changes: Change[] = v.rename ? renameChanges(v, carry) : [];
    const hostname = site.hostname;
    if (hostname !== undefined && v.node?.metadata.annotations?.[SITE_HOSTNAME_ANNOTATION] !== hostname)
      changes.push({
        action: 'set',
        target: `Node ${v.name} annotation ${SITE_HOSTNAME_ANNOTATION}`,
        summary: v.node ? hostname : `${hostname}, once kubelet has registered the Node`,
      });
    if (changes.length === 0)
      return {
        action: 'noop',
        reason:
          hostname === undefined
            ? 'the site-config sets no hostname'
            : `Node ${v.name} carries the site hostname ${hostname}`,
      };
    const rename = v.rename && {
      from: v.rename.from,
      to: v.rename.to,
      ...(carry && { carry }),
      secrets: v.rename.secrets,
      operators: v.rename.operators,
      deleteFormer: v.rename.former !== undefined,
    };
    return {
      action: 'change',
      summary: `Node ${v.name}: the site's identity`,
      changes,
      decision: { node: v.name, ...(rename && { rename }), ...(hostname !== undefined && { hostname }) },
    };
  },

  async apply(ctx, decision) {
    const kube = await ctx.kube();
    const { node: name, rename, hostname } = decision;
    // kubelet registers the Node moments after its client certificate is approved; a renamed Node
    // is never Ready while the former one exists, so only its existence is waited for
    const node = await pollUntil(ctx.clock, () => kube.get<NodeObject>(nodeRef(name)), {
      timeoutMs: ctx.options.healthTimeoutSeconds * 1000,
      intervalMs: 1000,
      maxIntervalMs: 5000,
    });
    if (!node)
      throw new VerificationError(
        `node-identity: Node ${name} not registered after ${ctx.options.healthTimeoutSeconds}s`,
        { step: 'node-identity', retryable: true },
      );
    if (rename) await completeRename(ctx, kube, name, rename);
    if (hostname !== undefined) {
      await kube.mergePatch(nodeRef(name), { metadata: { annotations: { [SITE_HOSTNAME_ANNOTATION]: hostname } } });
      ctx.log.info({ node: name, hostname }, `Node ${name} annotated with the site hostname`);
    }
  },
};

async function completeRename(
  ctx: StepContext,
  kube: Kube,
  name: string,
  r: NonNullable<NodeIdentityDecision['rename']>,
) {
  const { carry } = r;
  if (carry) {
    // read-modify-write of the Node as it is now: the decision's labels and taints merged into it
    await kube.update<NodeObject>(nodeRef(name), (n) => {
      const { labels, taints } = carried(carry, n);
      n.metadata.labels = { ...n.metadata.labels, ...labels };
      n.spec = { ...n.spec, taints };
      return n;
    });
    ctx.log.info(
      { node: name, labels: Object.keys(carry.labels), taints: carry.taints },
      `Node ${name}: labels and taints of ${r.from}`,
    );
  }
  for (const s of r.secrets) {
    // the decision names the copy; its content (etcd's keys) is read only here, never into a view
    const old = await kube.get<Secret>({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: ETCD_NAMESPACE,
      name: `${s}-${r.from}`,
    });
    if (!old) continue;
    await kube.create<Secret>({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: `${s}-${r.to}`,
        namespace: ETCD_NAMESPACE,
        ...(old.metadata.annotations && { annotations: old.metadata.annotations }),
      },
      ...(old.type && { type: old.type }),
      data: old.data ?? {},
    });
    await kube.update<Secret>(
      { apiVersion: 'v1', kind: 'Secret', namespace: ETCD_NAMESPACE, name: ALL_CERTS },
      (all) => {
        const data = { ...all.data };
        for (const [k, value] of Object.entries(old.data ?? {}))
          data[`${s}-${r.to}.${k.replace(/^tls\./, '')}`] = value;
        return { ...all, data };
      },
    );
  }
  for (const kind of r.operators)
    await kube.updateStatus<Operator>({ apiVersion: OPERATOR_API, kind, name: 'cluster' }, (o) => {
      o.status = {
        ...o.status,
        nodeStatuses: (o.status?.nodeStatuses ?? []).map((n) => (n.nodeName === r.from ? { ...n, nodeName: r.to } : n)),
      };
      return o;
    });
  if (r.deleteFormer) {
    await kube.delete(nodeRef(r.from));
    ctx.log.info({ node: r.from }, `Node ${r.from} deleted: the former name of ${r.to}`);
  }
}
