/**
 * [node-rename] With spec.nodeName: rename, the Node takes the site hostname, only where the
 * preflight (src/node/rename-preflight.ts) finds nothing a rename breaks. The node first comes up
 * under the name it has, as without a rename (node-name pinned it, the kubelet gate started
 * kubelet, csr-approval approved its requests), so the cluster answers the preflight at a site boot
 * as at the factory. Every reason it finds is named, and the step declines: at `plan` (exit 3)
 * before anything changes; in a run before this step changes anything, the Node left under the name
 * it has and the run going on (a refused rename never stops the move), with the run's status, the
 * hub report's InService condition and the console's last line saying why. A later run (the stick
 * again, or `sno-relocate run`) plans the rename again. The reasons that pass by themselves (a
 * static-pod rollout, a machine-config pool updating, a pending certificate request) are waited for
 * in a run first, up to RENAME_WAIT_MINUTES, and count only if they are still there.
 *
 * Allowed, it does the offline part of the procedure (research node-rename.md section 4, steps 1-2;
 * lifecycle-agent lca-cli/ipconfig/prepivot.go, recert hostname_rename/filesystem_rename.rs):
 * records the former name for csr-approval and node-identity, stops kubelet, stops and removes
 * CRI-O's pod sandboxes (crictl stopp, rmp: stopping kubelet leaves them running, and ovnkube-node
 * and multus would go on writing the files that change; recert's offline mode expects them down,
 * as lifecycle-agent's prepivot leaves them), clears the OVN
 * databases and the ovnkube-node and multus certificates (they carry the former name and are made
 * again), copies the etcd certificate files to the new name (their SANs are addresses only; the
 * etcd manifest keeps naming the former ones), writes the new KUBELET_NODE_NAME and starts kubelet.
 * Its settle approves kubelet's requests for the new name (research step 3: the client request
 * comes from the node under its former name). The online part, as soon as the new Node exists, is
 * node-identity's. A cut anywhere resumes: before kubelet-env names the new name the step runs
 * again from its preflight; after, csr-approval and node-identity finish it.
 */
import path from 'node:path/posix';
import { parseCidr } from '../base/addresses.js';
import { StepError } from '../base/errors.js';
import { internalIPs, type Site } from '../config/site.js';
import type { Step, StepContext } from './step.js';
import { type FactoryRecord, readFactoryRecord, recordedInternalIPs } from '../node/factory-record.js';
import { pollUntil } from '../ports/clock.js';
import type { Change, PlanResult } from '../engine/step.js';
import { KUBELET_ENV_FILE, NODE_NAME_VAR, layKubeletEnv, registeredNodeName, withNodeName } from '../node/node-name.js';
import { declaredFiles, driftFromRendered } from '../node/rendered-config.js';
import {
  type ClusterFacts,
  type NodeFacts,
  type Refusal,
  renameRefusals,
  STARTUP_MONITOR_MANIFEST,
  surveyCluster,
} from '../node/rename-preflight.js';
import {
  ETCD_CERTS_DIR,
  etcdCertFiles,
  OFFLINE_CLEARED,
  renameRecordPath,
  writeRenameRecord,
  type RenameRecord,
} from '../node/rename.js';
import { approveUntilIssued } from '../node/kubelet-csrs.js';

const KUBELET_UNIT = 'kubelet.service';
/** crictl: CRI-O's own client, on every RHCOS node */
const CRICTL = 'crictl';
const CRICTL_TIMEOUT_MS = 300_000;
const KUBELET_JOB_TIMEOUT_MS = 300_000;
/** plan is pure and has no state folder: the record is named relative to it */
const STATE_DIR_IN_PLAN = '<state-dir>';
/**
 * How long a run waits for the reasons that pass by themselves: a static-pod revision after a long
 * shelf (certificate rotation) takes 10 to 20 minutes to roll out on a single node.
 */
export const RENAME_WAIT_MINUTES = 20;

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
    /** in a run: the minutes waited for the reasons that pass by themselves, when there were some */
    waitedMinutes?: number;
  };
}

/** What apply does, in this order: kubelet stopped and started around the files that carry the name. */
export interface NodeRenameDecision {
  /** the record of the former name (node-rename.json in the state folder) csr-approval and node-identity read */
  record: RenameRecord;
  /** files that carry the former name, removed: they are made again */
  remove: string[];
  /** the etcd certificate files copied to the new name, mode kept */
  copy: { from: string; to: string }[];
  /** kubelet-env's content once it names the new name, its other lines kept */
  kubeletEnv: string;
}

/** the new name, when the site asks for a rename */
const wanted = (site: { nodeName?: string; hostname?: string }) =>
  site.nodeName === 'rename' ? site.hostname : undefined;

/** The factory's internal IPs -> the site's, when the site-config moves one (an address, not only its prefix). */
export function addressChange(record: FactoryRecord | undefined, site: Pick<Site, 'network'>): string | undefined {
  if (!record) return undefined;
  const factory = recordedInternalIPs(record);
  const wantedIPs = internalIPs(site.network);
  const same = (a: string, b: string) => parseCidr(a).ip === parseCidr(b).ip;
  if (wantedIPs.every((ip) => factory.some((f) => same(f, ip)))) return undefined;
  return `${factory.join(' and ')} at the factory, ${wantedIPs.join(' and ')} at the site`;
}

type Preflight = Omit<NonNullable<NodeRenameView['pending']>, 'waitedMinutes'>;

/** The preflight's reads: the cluster, and the node's own files. */
async function preflight(ctx: StepContext, current: string): Promise<Preflight> {
  // independent reads, asked together
  const [cluster, declared, startupMonitor, present, etcdCerts, record] = await Promise.all([
    ctx.kube().then((kube) => surveyCluster(kube, current)),
    declaredFiles(ctx.fs),
    ctx.fs.exists(STARTUP_MONITOR_MANIFEST),
    Promise.all(OFFLINE_CLEARED.map(async (p) => ((await ctx.fs.exists(p)) ? [p] : []))).then((f) => f.flat()),
    etcdCertFiles(ctx.fs, current),
    readFactoryRecord(ctx.fs),
  ]);
  const moved = addressChange(record, ctx.site);
  return {
    cluster,
    node: { ...(declared && { declared }), startupMonitor, ...(moved !== undefined && { addressChange: moved }) },
    present,
    etcdCerts,
  };
}

const reasonsOf = (p: Preflight): Refusal[] => renameRefusals(p.cluster, p.node);

async function survey(ctx: StepContext): Promise<NodeRenameView> {
  const kubeletEnv = await ctx.fs.readText(KUBELET_ENV_FILE);
  const current = await registeredNodeName(ctx.fs);
  const view: NodeRenameView = { current, ...(kubeletEnv !== undefined && { kubeletEnv }) };
  const to = wanted(ctx.site);
  if (!to || to === current) return view;
  let pending = await preflight(ctx, current);
  const first = reasonsOf(pending);
  // in a run (not at plan), reasons that pass by themselves are waited for when nothing else refuses
  if (ctx.run === undefined || first.length === 0 || first.some((r) => !r.transient)) {
    view.pending = pending;
    return view;
  }
  const began = ctx.clock.monotonic();
  const waitingFor = first.map((r) => r.reason).join('; ');
  ctx.log.info({ waitingFor }, `rename ${current} -> ${to} waits up to ${RENAME_WAIT_MINUTES} min for: ${waitingFor}`);
  await ctx.run?.progress?.(`waiting up to ${RENAME_WAIT_MINUTES} min before renaming: ${waitingFor}`);
  await pollUntil(
    ctx.clock,
    async () => {
      pending = await preflight(ctx, current);
      return reasonsOf(pending).every((r) => !r.transient) ? true : undefined;
    },
    { timeoutMs: RENAME_WAIT_MINUTES * 60_000, intervalMs: 2_000, maxIntervalMs: 15_000 },
  );
  view.pending = { ...pending, waitedMinutes: Math.round((ctx.clock.monotonic() - began) / 60_000) };
  return view;
}

function plan(v: NodeRenameView, site: { nodeName?: string; hostname?: string }): PlanResult<NodeRenameDecision> {
  const to = wanted(site);
  if (!to) return { action: 'noop', reason: `the Node keeps its name ${v.current}` };
  if (!v.pending) return { action: 'noop', reason: `the Node is named ${to}` };
  const from = v.current;
  const p = v.pending;
  const refusals = reasonsOf(p);
  const kubeletEnv = withNodeName(v.kubeletEnv, to);
  const drift = driftFromRendered(p.node.declared, KUBELET_ENV_FILE, kubeletEnv);
  if (drift) refusals.push({ reason: drift, transient: false });
  if (refusals.length > 0) {
    // a run waits for the reasons that pass by themselves only when nothing else refuses
    const waited =
      p.waitedMinutes !== undefined
        ? ` (still so after ${p.waitedMinutes} min of waiting)`
        : refusals.every((r) => r.transient)
          ? ` (a run waits up to ${RENAME_WAIT_MINUTES} min for them first)`
          : '';
    return {
      action: 'declined',
      reason: `rename ${from} -> ${to} refused, the Node keeps the name ${from}: ${refusals.map((r) => r.reason).join('; ')}${waited}; run again once nothing refuses`,
    };
  }
  const copy = p.etcdCerts.map((f) => ({
    from: path.join(ETCD_CERTS_DIR, f),
    to: path.join(ETCD_CERTS_DIR, f.replace(`-${from}.`, `-${to}.`)),
  }));
  const changes: Change[] = [
    { action: 'create', target: renameRecordPath(STATE_DIR_IN_PLAN), summary: `the former name ${from}` },
    { action: 'set', target: KUBELET_UNIT, summary: 'stopped, while the files that carry the name change' },
    {
      action: 'delete',
      target: 'CRI-O pod sandboxes',
      summary: 'stopped and removed (crictl stopp, rmp): ovnkube-node and multus write the files below',
    },
    ...p.present.map((f) => ({ action: 'delete' as const, target: f, summary: `carries the name ${from}` })),
    ...copy.map((c) => ({
      action: 'create' as const,
      target: c.to,
      summary: `copy of ${path.basename(c.from)}: etcd's certificates name addresses only`,
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
  return {
    action: 'change',
    summary: `rename the Node ${from} -> ${to}`,
    changes,
    decision: {
      record: { from, to },
      remove: p.present,
      copy,
      kubeletEnv,
    },
  };
}

/** Stops and removes every pod sandbox CRI-O runs; kubelet, started again, makes them anew. */
async function stopPodSandboxes(ctx: StepContext): Promise<string[]> {
  const listed = await ctx.exec.run(CRICTL, ['pods', '--quiet'], { timeoutMs: CRICTL_TIMEOUT_MS });
  const ids = listed.stdout.split('\n').flatMap((l) => (l.trim() ? [l.trim()] : []));
  if (ids.length === 0) return ids;
  await ctx.exec.run(CRICTL, ['stopp', ...ids], { timeoutMs: CRICTL_TIMEOUT_MS });
  await ctx.exec.run(CRICTL, ['rmp', ...ids], { timeoutMs: CRICTL_TIMEOUT_MS });
  return ids;
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

export const nodeRenameStep: Step<NodeRenameView, NodeRenameDecision> = {
  name: 'node-rename',
  group: 'cluster',
  description:
    'with spec.nodeName: rename and a preflight that finds nothing a rename breaks: the OVN and etcd files of the former name, then kubelet restarted under the site hostname',
  inputs: (site) => ({ nodeName: site.nodeName ?? 'keep', hostname: wanted(site) ?? null }),
  survey,
  plan,

  async apply(ctx, decision) {
    const { record, remove, copy, kubeletEnv } = decision;
    await writeRenameRecord(ctx.fs, ctx.stateDir, record);
    await kubeletJob(ctx, 'stop');
    const sandboxes = await stopPodSandboxes(ctx);
    ctx.log.info({ sandboxes: sandboxes.length }, `${sandboxes.length} pod sandbox(es) stopped and removed`);
    for (const f of remove) await ctx.fs.remove(f);
    for (const c of copy) {
      const data = await ctx.fs.read(c.from);
      if (data === undefined) continue;
      const mode = (await ctx.fs.mode(c.from)) ?? 0o600;
      await ctx.fs.writeAtomic(c.to, data, { mode });
    }
    await layKubeletEnv(ctx.fs, kubeletEnv);
    ctx.log.info(
      { ...record, cleared: remove, etcdCerts: copy.map((c) => path.basename(c.from)) },
      `Node ${record.from} prepared for its new name ${record.to}`,
    );
    await kubeletJob(ctx, 'start');
    ctx.log.info({ unit: KUBELET_UNIT, nodeName: record.to }, `kubelet started to register as ${record.to}`);
  },

  // kubelet, started under the new name, files its requests: approved as they come, until both are
  settle: (ctx) => approveUntilIssued(ctx),
};
