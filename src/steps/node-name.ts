/**
 * [node-name] Which name kubelet registers the Node under, decided before the hostname changes
 * and before kubelet starts (src/node/node-name.ts: OpenShift's kubelet unit passes
 * KUBELET_NODE_NAME from /etc/kubernetes/kubelet-env as --hostname-override).
 *
 * By default the node keeps its factory name: the site's hostname becomes only the OS hostname,
 * and KUBELET_NODE_NAME pins the Node to the name its kubelet certificate carries. etcd's member
 * and certificates, OVN's zone and chassis, the static-pod operators' nodeStatuses and the node
 * affinity of local volumes are keyed by that name (docs/node-name.md), so none of them sees a
 * change and no former Node is left behind.
 *
 * With spec.nodeName: rename the Node takes the site hostname, only where the preflight
 * (src/node/rename-preflight.ts) finds nothing a rename breaks; every reason it finds is named at
 * plan, and the run is refused before anything changes. The preflight reads the cluster, so a
 * rename runs where its API answers (kubelet running, as at the factory). Then, before kubelet
 * registers the new name: the OVN databases and the ovnkube-node and multus certificates are
 * cleared (they carry the old name), the etcd certificate files are copied to the new name (their
 * SANs are addresses only), the former name is recorded for the node-identity step, and kubelet
 * is restarted under the new name.
 */
import path from 'node:path/posix';
import type { Step, StepContext } from '../config/site.js';
import type { Change, PlanResult } from '../engine/step.js';
import { readStaticHostname } from '../node/hostname.js';
import {
  certifiedNodeName,
  KUBELET_ENV_FILE,
  kubeletEnvNodeName,
  NODE_NAME_VAR,
  withNodeName,
} from '../node/node-name.js';
import { type DeclaredFiles, declaredFiles, driftFromRendered } from '../node/rendered-config.js';
import {
  type ClusterFacts,
  renameRefusals,
  STARTUP_MONITOR_MANIFEST,
  surveyCluster,
} from '../node/rename-preflight.js';
import {
  ETCD_CERTS_DIR,
  etcdCertFiles,
  OFFLINE_CLEARED,
  readRenameRecord,
  renameRecordPath,
  writeRenameRecord,
} from '../node/rename.js';

/** how long the rename's preflight waits for the cluster's API */
const RENAME_API_WAIT_MS = 15_000;
const KUBELET_UNIT = 'kubelet.service';
/** plan is pure and has no state folder: the record is named relative to it */
const STATE_DIR_IN_PLAN = '<state-dir>';
const KUBELET_RESTART_TIMEOUT_MS = 300_000;

/** What the step reads: kubelet's name sources, the rendered config, and for a rename its preflight. */
export interface NodeNameView {
  /** /etc/kubernetes/kubelet-env as it is, if it exists */
  kubeletEnv?: string;
  /** the name in kubelet's client certificate */
  certified?: string;
  /** the static hostname now */
  hostname: string;
  declared?: DeclaredFiles;
  /** the former name a rename recorded, once it started */
  renamedFrom?: string;
  rename?: {
    /** the cluster as the preflight read it, or why it could not */
    cluster: ClusterFacts | { unreachable: string };
    startupMonitor: boolean;
    /** which of the files that carry the old name exist */
    present: string[];
    etcdCerts: string[];
    kubeletActive: boolean;
  };
}

/** The name the Node has now: kubelet-env's, else its certificate's, else the (factory) hostname. */
const registered = (v: NodeNameView) =>
  kubeletEnvNodeName(v.kubeletEnv) ?? v.certified ?? (v.hostname.toLowerCase() || undefined);
/** The name a rename starts from: the one it recorded (a rerun after a cut), else the Node's now. */
const currentName = (v: NodeNameView, site: { nodeName?: string }) =>
  (site.nodeName === 'rename' ? v.renamedFrom : undefined) ?? registered(v);

function envChange(v: NodeNameView, name: string, why: string): Change[] {
  const want = withNodeName(v.kubeletEnv, name);
  if (v.kubeletEnv === want) return [];
  return [
    {
      action: v.kubeletEnv === undefined ? 'create' : 'update',
      target: KUBELET_ENV_FILE,
      summary: why,
      diff: [`- ${NODE_NAME_VAR}=${kubeletEnvNodeName(v.kubeletEnv) ?? ''}`, `+ ${NODE_NAME_VAR}=${name}`],
    },
  ];
}

function planKeep(v: NodeNameView, name: string): PlanResult {
  const changes = envChange(v, name, 'kubelet registers under the factory name; the OS hostname is the site');
  if (changes.length === 0) return { action: 'noop', reason: `kubelet registers the Node as ${name}` };
  return { action: 'change', summary: `keep the Node's name ${name}`, changes };
}

function planRename(v: NodeNameView, from: string, to: string): PlanResult {
  if (kubeletEnvNodeName(v.kubeletEnv) === to) return { action: 'noop', reason: `kubelet registers the Node as ${to}` };
  const r = v.rename!;
  if ('unreachable' in r.cluster)
    return {
      action: 'conflict',
      reason: `rename ${from} -> ${to}: the preflight reads the cluster and ${r.cluster.unreachable}; run it where the API answers, or keep the name`,
    };
  const refusals = renameRefusals(r.cluster, {
    ...(v.declared && { declared: v.declared }),
    startupMonitor: r.startupMonitor,
  });
  if (refusals.length > 0)
    return { action: 'conflict', reason: `rename ${from} -> ${to} refused: ${refusals.join('; ')}` };
  const changes: Change[] = [
    {
      action: 'create',
      target: renameRecordPath(STATE_DIR_IN_PLAN),
      summary: `the former name ${from}, for node-identity`,
    },
    ...r.present.map((p) => ({ action: 'delete' as const, target: p, summary: `carries the name ${from}` })),
    ...r.etcdCerts.map((f) => ({
      action: 'create' as const,
      target: path.join(ETCD_CERTS_DIR, f.replace(`-${from}.`, `-${to}.`)),
      summary: `copy of ${f}: etcd's certificates name addresses only`,
    })),
    ...envChange(v, to, 'kubelet registers under the site hostname'),
    ...(r.kubeletActive
      ? [{ action: 'start' as const, target: KUBELET_UNIT, summary: 'restart, so that it registers the new name' }]
      : []),
  ];
  return { action: 'change', summary: `rename the Node ${from} -> ${to}`, changes };
}

export const nodeNameStep: Step<NodeNameView> = {
  name: 'node-name',
  group: 'node',
  description:
    'the Node keeps its factory name (KUBELET_NODE_NAME in /etc/kubernetes/kubelet-env), or with spec.nodeName: rename takes the site hostname where the preflight allows',
  inputs: (site) => ({
    nodeName: site.nodeName ?? 'keep',
    hostname: site.nodeName === 'rename' ? site.hostname : null,
  }),

  async survey(ctx) {
    const declared = await declaredFiles(ctx.fs);
    const record = await readRenameRecord(ctx.fs, ctx.stateDir);
    const view: NodeNameView = {
      ...(await ctx.fs.readText(KUBELET_ENV_FILE).then((t) => (t === undefined ? {} : { kubeletEnv: t }))),
      ...(await certifiedNodeName(ctx.fs).then((c) => (c ? { certified: c } : {}))),
      hostname: await readStaticHostname(ctx.fs),
      ...(declared && { declared }),
      ...(record && { renamedFrom: record.from }),
    };
    const to = ctx.site.hostname;
    const from = currentName(view, ctx.site);
    if (ctx.site.nodeName !== 'rename' || !to || !from || kubeletEnvNodeName(view.kubeletEnv) === to) return view;
    const timeout = ctx.clock.sleep(RENAME_API_WAIT_MS).then(() => undefined);
    const kube = await Promise.race([ctx.kube().catch(() => undefined), timeout]);
    let cluster: ClusterFacts | { unreachable: string };
    if (!kube) cluster = { unreachable: `its API did not answer within ${RENAME_API_WAIT_MS / 1000}s` };
    else cluster = await surveyCluster(kube, from);
    const present = [];
    for (const p of OFFLINE_CLEARED) if (await ctx.fs.exists(p)) present.push(p);
    const status = await (await ctx.systemd()).unitStatus(KUBELET_UNIT);
    view.rename = {
      cluster,
      startupMonitor: await ctx.fs.exists(STARTUP_MONITOR_MANIFEST),
      present,
      etcdCerts: await etcdCertFiles(ctx.fs, from),
      kubeletActive: status.activeState === 'active',
    };
    return view;
  },

  plan(view, site): PlanResult {
    const from = currentName(view, site);
    if (!from)
      return {
        action: 'conflict',
        reason: `the Node's name is unknown: no ${NODE_NAME_VAR} in ${KUBELET_ENV_FILE}, no kubelet client certificate, no hostname`,
      };
    const to = site.nodeName === 'rename' ? site.hostname! : from;
    const want = withNodeName(view.kubeletEnv, to);
    const drift = driftFromRendered(view.declared, KUBELET_ENV_FILE, want);
    if (drift) return { action: 'conflict', reason: `${drift}; a MachineConfig owns the node name there` };
    return site.nodeName === 'rename' ? planRename(view, from, to) : planKeep(view, from);
  },

  async apply(ctx, view) {
    const from = currentName(view, ctx.site)!;
    const to = ctx.site.nodeName === 'rename' ? ctx.site.hostname! : from;
    if (to !== from) await prepareRename(ctx, view, from, to);
    await ctx.fs.mkdirp(path.dirname(KUBELET_ENV_FILE), 0o755);
    await ctx.fs.writeAtomic(KUBELET_ENV_FILE, withNodeName(view.kubeletEnv, to), { mode: 0o644 });
    ctx.log.info({ nodeName: to }, `kubelet registers the Node as ${to}`);
    if (to !== from && view.rename?.kubeletActive) {
      const { jobResult } = await (await ctx.systemd()).restartAndWait(KUBELET_UNIT, KUBELET_RESTART_TIMEOUT_MS);
      ctx.log.info({ unit: KUBELET_UNIT, jobResult }, `kubelet restarted to register as ${to}`);
    }
  },
};

async function prepareRename(ctx: StepContext, view: NodeNameView, from: string, to: string) {
  await writeRenameRecord(ctx.fs, ctx.stateDir, { from, to });
  for (const p of view.rename?.present ?? []) await ctx.fs.remove(p);
  for (const f of view.rename?.etcdCerts ?? []) {
    const data = await ctx.fs.read(path.join(ETCD_CERTS_DIR, f));
    if (data === undefined) continue;
    const mode = (await ctx.fs.mode(path.join(ETCD_CERTS_DIR, f))) ?? 0o600;
    await ctx.fs.writeAtomic(path.join(ETCD_CERTS_DIR, f.replace(`-${from}.`, `-${to}.`)), data, { mode });
  }
  ctx.log.info({ from, to, cleared: view.rename?.present }, `Node ${from} prepared for its new name ${to}`);
}
