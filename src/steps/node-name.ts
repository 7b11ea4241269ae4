/**
 * [node-name] Which name kubelet registers the Node under, decided before the hostname changes
 * and before kubelet starts (src/node/node-name.ts: OpenShift's kubelet unit passes
 * KUBELET_NODE_NAME from /etc/kubernetes/kubelet-env as --hostname-override).
 *
 * The node comes up under the name it has: the site's hostname becomes only the OS hostname, and
 * KUBELET_NODE_NAME pins the Node to the name its kubelet certificate carries. etcd's member and
 * certificates, OVN's zone and chassis, the static-pod operators' nodeStatuses and the node
 * affinity of local volumes are keyed by that name (docs/node-name.md), so none of them sees a
 * change and no former Node is left behind. With spec.nodeName: rename this holds too: the rename
 * is the node-rename step's, once kubelet runs and the cluster answers its preflight; after it,
 * the name kept is the new one kubelet-env names.
 */
import type { Step } from './step.js';
import type { Change, PlanResult } from '../engine/step.js';
import { readStaticHostname } from '../node/hostname.js';
import {
  certifiedNodeName,
  KUBELET_ENV_FILE,
  kubeletEnvNodeName,
  layKubeletEnv,
  NODE_NAME_VAR,
  withNodeName,
} from '../node/node-name.js';
import { type DeclaredFiles, declaredFiles, driftFromRendered } from '../node/rendered-config.js';

/** What the step reads: kubelet's name sources and the rendered config. */
export interface NodeNameView {
  /** /etc/kubernetes/kubelet-env as it is, if it exists */
  kubeletEnv?: string;
  /** the name in kubelet's client certificate */
  certified?: string;
  /** the static hostname now */
  hostname: string;
  declared?: DeclaredFiles;
}

/** The name the Node has now: kubelet-env's, else its certificate's, else the (factory) hostname. */
const registered = (v: NodeNameView) =>
  kubeletEnvNodeName(v.kubeletEnv) ?? v.certified ?? (v.hostname.toLowerCase() || undefined);

/** What apply does: lay down kubelet-env as `kubeletEnv` (its other lines kept), pinning `nodeName`. */
export interface NodeNameDecision {
  nodeName: string;
  kubeletEnv: string;
}

export const nodeNameStep: Step<NodeNameView, NodeNameDecision> = {
  name: 'node-name',
  group: 'node',
  description:
    'the Node keeps its name (KUBELET_NODE_NAME in /etc/kubernetes/kubelet-env) while the OS hostname becomes the site',
  inputs: () => KUBELET_ENV_FILE,

  async survey(ctx) {
    const declared = await declaredFiles(ctx.fs);
    return {
      ...(await ctx.fs.readText(KUBELET_ENV_FILE).then((t) => (t === undefined ? {} : { kubeletEnv: t }))),
      ...(await certifiedNodeName(ctx.fs).then((c) => (c ? { certified: c } : {}))),
      hostname: await readStaticHostname(ctx.fs),
      ...(declared && { declared }),
    };
  },

  plan(view): PlanResult<NodeNameDecision> {
    const name = registered(view);
    if (!name)
      return {
        action: 'conflict',
        reason: `the Node's name is unknown: no ${NODE_NAME_VAR} in ${KUBELET_ENV_FILE}, no kubelet client certificate, no hostname`,
      };
    const want = withNodeName(view.kubeletEnv, name);
    const drift = driftFromRendered(view.declared, KUBELET_ENV_FILE, want);
    if (drift) return { action: 'conflict', reason: `${drift}; a MachineConfig owns the node name there` };
    if (view.kubeletEnv === want) return { action: 'noop', reason: `kubelet registers the Node as ${name}` };
    const changes: Change[] = [
      {
        action: view.kubeletEnv === undefined ? 'create' : 'update',
        target: KUBELET_ENV_FILE,
        summary: 'kubelet registers under the name it has; the OS hostname is the site',
        diff: [`- ${NODE_NAME_VAR}=${kubeletEnvNodeName(view.kubeletEnv) ?? ''}`, `+ ${NODE_NAME_VAR}=${name}`],
      },
    ];
    return {
      action: 'change',
      summary: `keep the Node's name ${name}`,
      changes,
      decision: { nodeName: name, kubeletEnv: want },
    };
  },

  async apply(ctx, { nodeName, kubeletEnv }) {
    await layKubeletEnv(ctx.fs, kubeletEnv);
    ctx.log.info({ nodeName }, `kubelet registers the Node as ${nodeName}`);
  },
};
