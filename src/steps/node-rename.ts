/**
 * [node-rename] With spec.nodeName: rename, the Node takes the site hostname, only where the
 * preflight (src/node/rename-preflight.ts) finds nothing a rename breaks. The node first comes up
 * under the name it has, as without a rename (node-name pinned it, the kubelet gate started
 * kubelet, csr-approval approved its requests), so the cluster answers the preflight at a site boot
 * as at the factory. Every reason it finds is named, and the step refuses: at `plan` (exit 3)
 * before anything changes, and in a run before this step changes anything, the Node left under the
 * name it has and the run's status saying why.
 *
 * Allowed, it does the offline part of the procedure (research node-rename.md section 4, steps 1-2;
 * lifecycle-agent lca-cli/ipconfig/prepivot.go, recert hostname_rename/filesystem_rename.rs):
 * records the former name for csr-approval and node-identity, stops kubelet, clears the OVN
 * databases and the ovnkube-node and multus certificates (they carry the former name and are made
 * again), copies the etcd certificate files to the new name (their SANs are addresses only; the
 * etcd manifest keeps naming the former ones), writes the new KUBELET_NODE_NAME and starts kubelet.
 * Its settle approves kubelet's requests for the new name (research step 3: the client request
 * comes from the node under its former name). The online part, as soon as the new Node exists, is
 * node-identity's. A cut anywhere resumes: before kubelet-env names the new name the step runs
 * again from its preflight; after, csr-approval and node-identity finish it.
 */
import path from 'node:path/posix';
import { StepError } from '../base/errors.js';
import type { Step, StepContext } from '../config/site.js';
import type { Change, PlanResult } from '../engine/step.js';
import {
  KUBELET_ENV_FILE,
  NODE_NAME_VAR,
  registeredNodeName,
  withNodeName,
  writeKubeletEnv,
} from '../node/node-name.js';
import { declaredFiles, driftFromRendered } from '../node/rendered-config.js';
import {
  type ClusterFacts,
  type NodeFacts,
  renameRefusals,
  STARTUP_MONITOR_MANIFEST,
  surveyCluster,
} from '../node/rename-preflight.js';
import { ETCD_CERTS_DIR, etcdCertFiles, OFFLINE_CLEARED, renameRecordPath, writeRenameRecord } from '../node/rename.js';
import { approveUntilIssued } from './csr-approval.js';

const KUBELET_UNIT = 'kubelet.service';
const KUBELET_JOB_TIMEOUT_MS = 300_000;
/** plan is pure and has no state folder: the record is named relative to it */
const STATE_DIR_IN_PLAN = '<state-dir>';

/** What the step reads: the Node's name now, and before a rename its preflight and the files it changes. */
export interface NodeRenameView {
  /** the name kubelet registers under now */
  current: string;
  /** /etc/kubernetes/kubelet-env as it is, if it exists */
  kubeletEnv?: string;
  /** while the Node is yet to take the site hostname */
  pending?: {
    cluster: ClusterFacts;
    node: NodeFacts;
    /** which of the files that carry the former name exist */
    present: string[];
    /** the former name's etcd certificate files in ETCD_CERTS_DIR */
    etcdCerts: string[];
  };
}

/** the new name, when the site asks for a rename */
const wanted = (site: { nodeName?: string; hostname?: string }) =>
  site.nodeName === 'rename' ? site.hostname : undefined;

async function survey(ctx: StepContext): Promise<NodeRenameView> {
  const kubeletEnv = await ctx.fs.readText(KUBELET_ENV_FILE);
  const current = await registeredNodeName(ctx.fs);
  const view: NodeRenameView = { current, ...(kubeletEnv !== undefined && { kubeletEnv }) };
  const to = wanted(ctx.site);
  if (!to || to === current) return view;
  // independent reads, asked together
  const [cluster, declared, startupMonitor, present, etcdCerts] = await Promise.all([
    ctx.kube().then((kube) => surveyCluster(kube, current)),
    declaredFiles(ctx.fs),
    ctx.fs.exists(STARTUP_MONITOR_MANIFEST),
    Promise.all(OFFLINE_CLEARED.map(async (p) => ((await ctx.fs.exists(p)) ? [p] : []))).then((f) => f.flat()),
    etcdCertFiles(ctx.fs, current),
  ]);
  view.pending = { cluster, node: { ...(declared && { declared }), startupMonitor }, present, etcdCerts };
  return view;
}

function plan(v: NodeRenameView, site: { nodeName?: string; hostname?: string }): PlanResult {
  const to = wanted(site);
  if (!to) return { action: 'noop', reason: `the Node keeps its name ${v.current}` };
  if (!v.pending) return { action: 'noop', reason: `the Node is named ${to}` };
  const from = v.current;
  const p = v.pending;
  const refusals = renameRefusals(p.cluster, p.node);
  const drift = driftFromRendered(p.node.declared, KUBELET_ENV_FILE, withNodeName(v.kubeletEnv, to));
  if (drift) refusals.push(drift);
  if (refusals.length > 0)
    return {
      action: 'conflict',
      reason: `rename ${from} -> ${to} refused, the Node keeps the name ${from}: ${refusals.join('; ')}`,
    };
  const changes: Change[] = [
    { action: 'create', target: renameRecordPath(STATE_DIR_IN_PLAN), summary: `the former name ${from}` },
    { action: 'set', target: KUBELET_UNIT, summary: 'stopped, while the files that carry the name change' },
    ...p.present.map((f) => ({ action: 'delete' as const, target: f, summary: `carries the name ${from}` })),
    ...p.etcdCerts.map((f) => ({
      action: 'create' as const,
      target: path.join(ETCD_CERTS_DIR, f.replace(`-${from}.`, `-${to}.`)),
      summary: `copy of ${f}: etcd's certificates name addresses only`,
    })),
    {
      action: v.kubeletEnv === undefined ? 'create' : 'update',
      target: KUBELET_ENV_FILE,
      summary: 'kubelet registers under the site hostname',
      diff: [`- ${NODE_NAME_VAR}=${from}`, `+ ${NODE_NAME_VAR}=${to}`],
    },
    { action: 'start', target: KUBELET_UNIT, summary: `registers Node ${to}` },
    {
      action: 'approve',
      target: `kubelet's requests for ${to}`,
      summary: `the client one filed by the node as ${from}, then the serving one`,
    },
  ];
  return { action: 'change', summary: `rename the Node ${from} -> ${to}`, changes };
}

async function kubeletJob(ctx: StepContext, verb: 'stop' | 'start'): Promise<void> {
  const systemd = await ctx.systemd();
  const { jobResult } =
    verb === 'stop'
      ? await systemd.stopAndWait(KUBELET_UNIT, KUBELET_JOB_TIMEOUT_MS)
      : await systemd.startAndWait(KUBELET_UNIT, KUBELET_JOB_TIMEOUT_MS);
  if (jobResult !== 'done')
    throw new StepError(`node-rename: the ${verb} job of ${KUBELET_UNIT} ended ${jobResult}`, {
      step: 'node-rename',
      retryable: true,
    });
}

export const nodeRenameStep: Step<NodeRenameView> = {
  name: 'node-rename',
  group: 'cluster',
  description:
    'with spec.nodeName: rename and a preflight that finds nothing a rename breaks: the OVN and etcd files of the former name, then kubelet restarted under the site hostname',
  inputs: (site) => ({ nodeName: site.nodeName ?? 'keep', hostname: wanted(site) ?? null }),
  survey,
  plan,

  async apply(ctx, view) {
    const from = view.current;
    const to = wanted(ctx.site)!;
    const p = view.pending!;
    await writeRenameRecord(ctx.fs, ctx.stateDir, { from, to });
    await kubeletJob(ctx, 'stop');
    for (const f of p.present) await ctx.fs.remove(f);
    for (const f of p.etcdCerts) {
      const source = path.join(ETCD_CERTS_DIR, f);
      const data = await ctx.fs.read(source);
      if (data === undefined) continue;
      const mode = (await ctx.fs.mode(source)) ?? 0o600;
      await ctx.fs.writeAtomic(path.join(ETCD_CERTS_DIR, f.replace(`-${from}.`, `-${to}.`)), data, { mode });
    }
    await writeKubeletEnv(ctx.fs, view.kubeletEnv, to);
    ctx.log.info(
      { from, to, cleared: p.present, etcdCerts: p.etcdCerts },
      `Node ${from} prepared for its new name ${to}`,
    );
    await kubeletJob(ctx, 'start');
    ctx.log.info({ unit: KUBELET_UNIT, nodeName: to }, `kubelet started to register as ${to}`);
  },

  settle: (ctx) => approveUntilIssued(ctx),
};
