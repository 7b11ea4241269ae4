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

interface Taint {
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

/**
 * What the new Node takes of the former: the labels it lacks, and the former's taints in place of
 * the ones kubelet registered it with (the master NoSchedule taint the machine-config controller
 * had taken off the former), the lifecycle taints left as they are.
 */
function carried(former: NodeObject, node: NodeObject | undefined) {
  const have = node?.metadata.labels ?? {};
  const labels = Object.fromEntries(
    Object.entries(former.metadata.labels ?? {}).filter(([k, v]) => !KUBELET_OWNED_LABELS.has(k) && have[k] !== v),
  );
  const current = node?.spec?.taints ?? [];
  const role = (list: Taint[]) => list.filter((t) => !isLifecycleTaint(t));
  const wanted = role(former.spec?.taints ?? []);
  const taintsDiffer =
    wanted.length !== role(current).length || wanted.some((t) => !role(current).some((x) => sameTaint(t, x)));
  const taints = [...current.filter(isLifecycleTaint), ...wanted];
  return { labels, taints, taintsDiffer };
}

function renameChanges(v: NodeIdentityView): Change[] {
  const r = v.rename!;
  const out: Change[] = [];
  if (r.former) {
    const { labels, taints, taintsDiffer } = carried(r.former, v.node);
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

export const nodeIdentityStep: Step<NodeIdentityView> = {
  name: 'node-identity',
  group: 'cluster',
  description:
    "the site hostname as an annotation on the Node; after a rename, the former Node's labels, taints, etcd secrets and operator node statuses moved to the new name and the former Node deleted",
  inputs: (site) => ({ hostname: site.hostname ?? null, nodeName: site.nodeName ?? 'keep' }),
  survey,

  plan(v, site): PlanResult {
    const changes: Change[] = v.rename ? renameChanges(v) : [];
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
    return { action: 'change', summary: `Node ${v.name}: the site's identity`, changes };
  },

  async apply(ctx, view) {
    const kube = await ctx.kube();
    // kubelet registers the Node moments after its client certificate is approved; a renamed Node
    // is never Ready while the former one exists, so only its existence is waited for
    const node = await pollUntil(ctx.clock, () => kube.get<NodeObject>(nodeRef(view.name)), {
      timeoutMs: ctx.options.healthTimeoutSeconds * 1000,
      intervalMs: 1000,
      maxIntervalMs: 5000,
    });
    if (!node)
      throw new VerificationError(
        `node-identity: Node ${view.name} not registered after ${ctx.options.healthTimeoutSeconds}s`,
        { step: 'node-identity', retryable: true },
      );
    if (view.rename) await completeRename(ctx, kube, { ...view, node });
    if (ctx.site.hostname !== undefined) {
      await kube.mergePatch(nodeRef(view.name), {
        metadata: { annotations: { [SITE_HOSTNAME_ANNOTATION]: ctx.site.hostname } },
      });
      ctx.log.info(
        { node: view.name, hostname: ctx.site.hostname },
        `Node ${view.name} annotated with the site hostname`,
      );
    }
  },
};

async function completeRename(ctx: StepContext, kube: Kube, v: NodeIdentityView & { node: NodeObject }) {
  const r = v.rename!;
  if (r.former) {
    const former = r.former;
    const { labels, taints } = carried(former, v.node);
    await kube.update<NodeObject>(nodeRef(v.name), (n) => {
      n.metadata.labels = { ...n.metadata.labels, ...carried(former, n).labels };
      n.spec = { ...n.spec, taints: carried(former, n).taints };
      return n;
    });
    ctx.log.info(
      { node: v.name, labels: Object.keys(labels), taints },
      `Node ${v.name}: labels and taints of ${r.from}`,
    );
  }
  for (const s of r.secrets) {
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
  if (r.former) {
    await kube.delete(nodeRef(r.from));
    ctx.log.info({ node: r.from }, `Node ${r.from} deleted: the former name of ${r.to}`);
  }
}
