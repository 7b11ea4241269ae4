/**
 * `factory check`: whether the node is fit to ship. The cluster healthy (the watcher's checks,
 * every ClusterOperator Available and not Degraded, the master pool updated with the agent's
 * MachineConfigs in its rendered config), the agent installed on the node (its units enabled, the
 * kubelet gate drop-in, the internal-IP files, the executable), trust anchors (a loud warning
 * without), no site-config left behind, and the certificates that will have expired on arrival.
 */
import { errorMessage } from '../base/errors.js';
import type { Logger } from '../log/logger.js';
import { GATE_UNIT, KUBELET_GATE_DROP_IN, renderKubeletGateDropIn } from '../node/kubelet-gate.js';
import { nodeIpFiles } from '../node/internal-ip.js';
import { FACTORY_RECORD } from '../base/node-files.js';
import { type AgentSources, renderMachineConfigs } from '../node/machineconfig.js';
import type { Clock } from '../ports/clock.js';
import type { RootFs } from '../ports/fs.js';
import type { Kube, KubeObject } from '../ports/kube.js';
import { masterPoolUnsettled } from '../kube/rollout.js';
import { TRUST_DIR, trustAnchors } from '../trust/check.js';
import { NODE_KEY_CREDENTIAL, type NodeKey, readNodeKey } from '../trust/node-key.js';
import { EMPTY_CONTEXT } from '../watch/model.js';
import { readContextFile } from '../watch/context.js';
import { type CertificateReport, type CertificateScan, certificateReports, powerOnByDate } from './certificates.js';
import { DEFAULT_INTERNAL_IP } from './options.js';
import {
  type FactoryRecord,
  readFactoryRecord,
  recordedFamilies,
  recordedInternalIPs,
} from '../node/factory-record.js';
import { powerOnByLine } from '../node/shipment.js';

export type Verdict = 'ok' | 'warning' | 'fail';
type PowerOnBy = NonNullable<ReturnType<typeof powerOnByDate>>;

export interface CheckItem {
  check: string;
  verdict: Verdict;
  detail: string;
}

export interface CheckReport {
  fit: boolean;
  shelfDays: number;
  arrival: string;
  checks: CheckItem[];
  /** every certificate read; `expiredOnArrival` marks those gone by then */
  certificates: CertificateReport[];
  /** the certificate sources that could not be read, each with why */
  unreadable: string[];
  /** power on by this date: the earliest expiry nothing renews while the node is off, less a margin */
  powerOnBy?: PowerOnBy;
}

export interface CheckContext {
  fs: RootFs;
  kube: Kube;
  clock: Clock;
  log: Logger;
  stateDir: string;
  sources: AgentSources;
  shelfDays: number;
  /** a node key sealed to anything but a TPM2 fails the check */
  requireTpm?: boolean;
}

/** what `run` finds first on the node: a site-config left there would relocate the node at boot */
export const NODE_SITE_CONFIG = '/etc/sno-relocate/site-config.yaml';
const EXECUTABLES = ['/usr/local/bin/sno-relocate', '/usr/bin/sno-relocate'];
const SYNC_TIMEOUT_MS = 60_000;
const DAY_MS = 86_400_000;

const item = (check: string, problems: string[], okDetail: string, verdict: Verdict = 'fail'): CheckItem =>
  problems.length ? { check, verdict, detail: problems.join('; ') } : { check, verdict: 'ok', detail: okDetail };

async function watcherErrors(ctx: CheckContext): Promise<string[]> {
  const { ClusterView } = await import('../watch/view.js');
  const view = new ClusterView(ctx.kube.listWatch(), {
    clock: ctx.clock,
    log: ctx.log,
    ctx: (await readContextFile(ctx.fs, ctx.stateDir)) ?? EMPTY_CONTEXT,
  });
  try {
    view.start();
    await view.synced(SYNC_TIMEOUT_MS);
    return view
      .evaluate()
      .findings.filter((f) => f.severity === 'error')
      .map((f) => `${f.object}: ${f.reason}`);
  } finally {
    await view.stop();
  }
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
}
type WithConditions = KubeObject & { status?: { conditions?: Condition[]; configuration?: Rendered } };
interface Rendered {
  name?: string;
  source?: { name?: string }[];
}
const cond = (o: WithConditions, type: string) => o.status?.conditions?.find((c) => c.type === type);

async function operatorProblems(kube: Kube): Promise<string[]> {
  const out: string[] = [];
  for (const co of await kube.list<WithConditions>('config.openshift.io/v1', 'ClusterOperator')) {
    if (cond(co, 'Available')?.status !== 'True') out.push(`ClusterOperator ${co.metadata.name} not Available`);
    if (cond(co, 'Degraded')?.status === 'True') out.push(`ClusterOperator ${co.metadata.name} Degraded`);
  }
  return out;
}

async function poolProblems(ctx: CheckContext, wanted: string[]): Promise<string[]> {
  const out = await masterPoolUnsettled(ctx.kube);
  const pool = await ctx.kube.get<WithConditions>({
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'MachineConfigPool',
    name: 'master',
  });
  const sources = new Set((pool?.status?.configuration?.source ?? []).map((s) => s.name));
  const missing = wanted.filter((n) => !sources.has(n));
  if (pool && missing.length)
    out.push(
      `the master pool's rendered config ${pool.status?.configuration?.name ?? '?'} does not include ${missing.join(', ')}: run factory prepare, then wait for the pool`,
    );
  return out;
}

/**
 * OpenShift asks for 24 hours between installation and a shutdown: the short-lived certificates of
 * the installation (kubelet's bootstrap client certificate, the kube-apiserver-to-kubelet and
 * control-plane signers' first leaves) are first rotated in that time, and a cluster shut down before
 * cannot rotate them when it comes back (OpenShift documentation, "Shutting down the cluster
 * gracefully", prerequisites). Installation ends when the cluster version operator records the
 * first release as Completed: the oldest entry of ClusterVersion status.history.
 */
const SETTLE_AFTER_INSTALL_MS = DAY_MS;

interface ClusterVersion extends KubeObject {
  status?: { history?: { state?: string; completionTime?: string | null }[] };
}

/** When the installation completed, from ClusterVersion status.history; undefined while it has not. */
async function installedAt(kube: Kube): Promise<Date | undefined> {
  const cv = await kube.get<ClusterVersion>({
    apiVersion: 'config.openshift.io/v1',
    kind: 'ClusterVersion',
    name: 'version',
  });
  if (!cv) throw new Error('ClusterVersion version not found');
  const first = cv.status?.history?.at(-1);
  return first?.state === 'Completed' && first.completionTime ? new Date(first.completionTime) : undefined;
}

const minute = (d: Date) => `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

async function installationAge(ctx: CheckContext): Promise<string[]> {
  const at = await installedAt(ctx.kube);
  if (!at) return ['the installation has not completed (ClusterVersion status.history has no Completed release)'];
  const fit = new Date(at.getTime() + SETTLE_AFTER_INSTALL_MS);
  return ctx.clock.now() < fit
    ? [
        `installed ${minute(at)}, less than 24 hours ago: its first certificate rotation has not happened; fit to ship from ${minute(fit)}`,
      ]
    : [];
}

async function clusterChecks(ctx: CheckContext, wanted: string[]): Promise<CheckItem[]> {
  const guarded = async (check: string, okDetail: string, run: () => Promise<string[]>): Promise<CheckItem> => {
    try {
      return item(check, await run(), okDetail);
    } catch (err) {
      return { check, verdict: 'fail', detail: `could not be checked: ${errorMessage(err)}` };
    }
  };
  return [
    await guarded('installation age', 'installed more than 24 hours ago: its first certificate rotation is done', () =>
      installationAge(ctx),
    ),
    await guarded('watcher', "the watcher's checks find no error", () => watcherErrors(ctx)),
    await guarded('cluster operators', 'every ClusterOperator Available and not Degraded', () =>
      operatorProblems(ctx.kube),
    ),
    await guarded('machine config pool', `master pool updated, its rendered config holding ${wanted.join(', ')}`, () =>
      poolProblems(ctx, wanted),
    ),
  ];
}

/** the targets a unit's [Install] section names in WantedBy= */
const wantedBy = (unit: string): string[] =>
  [...unit.matchAll(/^WantedBy=(.+)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/));

async function unitProblems(fs: RootFs, sources: AgentSources): Promise<string[]> {
  const out: string[] = [];
  for (const [name, text] of Object.entries(sources.units)) {
    const file = `/etc/systemd/system/${name}`;
    const onDisk = await fs.readText(file);
    if (onDisk === undefined) out.push(`${file} missing`);
    else if (onDisk !== text) out.push(`${file} differs from this version's unit`);
    for (const target of wantedBy(text))
      if (!(await fs.exists(`/etc/systemd/system/${target}.wants/${name}`)))
        out.push(`${name} not enabled (${target})`);
  }
  const executable = await Promise.all(EXECUTABLES.map((e) => fs.exists(e)));
  if (!executable.some(Boolean)) out.push(`no executable at ${EXECUTABLES.join(' or ')}`);
  return out;
}

async function gateProblems(fs: RootFs): Promise<string[]> {
  const file = `/etc/systemd/system/kubelet.service.d/${KUBELET_GATE_DROP_IN}`;
  const text = await fs.readText(file);
  if (text === undefined) return [`${file} missing: kubelet would start at the site before the node steps`];
  return text === renderKubeletGateDropIn() ? [] : [`${file} differs from the gate ${GATE_UNIT} expects`];
}

/**
 * The node key: which sealing holds it; none is a warning, or a failure when the factory asks for
 * TPM. A factory record naming another key (the key was made again) fails: the inventory holds the
 * record's, and sites sealed to it would not open. A record made before the key names none.
 */
async function nodeKeyItem(fs: RootFs, record: FactoryRecord | undefined, requireTpm: boolean): Promise<CheckItem> {
  let key: NodeKey | undefined;
  try {
    key = await readNodeKey(fs);
  } catch (err) {
    return { check: 'node key', verdict: 'fail', detail: errorMessage(err) };
  }
  if (!key || !(await fs.exists(NODE_KEY_CREDENTIAL)))
    return item(
      'node key',
      [`no node key (${NODE_KEY_CREDENTIAL}): site secrets cannot be sealed to this node; run factory prepare`],
      '',
      requireTpm ? 'fail' : 'warning',
    );
  const sealing = key.sealing === 'tpm2' ? "sealed to the node's TPM2" : 'sealed with the host key (no TPM2)';
  const problems = [
    ...(requireTpm && key.sealing !== 'tpm2' ? [`node key ${sealing}, and a TPM2 is required`] : []),
    ...(record?.nodeKey !== undefined && record.nodeKey !== key.recipient
      ? [
          `${FACTORY_RECORD} names the node key ${record.nodeKey}, but the node holds ${key.recipient} (made again since): sites sealed to the recorded key do not open here`,
        ]
      : []),
  ];
  const predates = record && record.nodeKey === undefined ? `; ${FACTORY_RECORD} predates it and names none` : '';
  return item('node key', problems, `${key.recipient}, ${sealing}${predates}`);
}

async function nodeChecks(ctx: CheckContext): Promise<{ items: CheckItem[]; wanted: string[] }> {
  const { fs } = ctx;
  const record = await readFactoryRecord(fs);
  const items: CheckItem[] = [
    item(
      'factory record',
      record ? [] : ['/etc/sno-relocate/factory.json missing: run factory prepare on this node'],
      record
        ? recordedFamilies(record)
            .map((f) => `internal IP ${f.internalIP}, install subnet ${f.installSubnet}`)
            .join('; ')
        : '',
    ),
    item('agent units', await unitProblems(fs, ctx.sources), 'units installed and enabled, executable present'),
    item('kubelet gate', await gateProblems(fs), `kubelet held by ${KUBELET_GATE_DROP_IN} until the site's node steps`),
  ];
  if (record) {
    const drift: string[] = [];
    const pinned = recordedInternalIPs(record).join(' and ');
    for (const f of nodeIpFiles(recordedInternalIPs(record)))
      if ((await fs.readText(f.path)) !== f.content) drift.push(`${f.path} does not pin ${pinned}`);
    items.push(item('internal IP', drift, `kubelet, CRI-O and br-ex pinned to ${pinned}`));
  }
  let anchors = 0;
  let anchorError: string | undefined;
  try {
    anchors = (await trustAnchors(fs)).length;
  } catch (err) {
    anchorError = errorMessage(err);
  }
  items.push(
    anchorError
      ? { check: 'trust anchors', verdict: 'fail', detail: anchorError }
      : item(
          'trust anchors',
          anchors ? [] : [`NO TRUST ANCHOR under ${TRUST_DIR}: the node will accept ANY site-config, signed or not`],
          `${anchors} key(s) under ${TRUST_DIR}: only signed site-configs are accepted`,
          'warning',
        ),
  );
  items.push(await nodeKeyItem(fs, record, ctx.requireTpm ?? false));
  items.push(
    item(
      'no site-config',
      (await fs.exists(NODE_SITE_CONFIG))
        ? [`${NODE_SITE_CONFIG} is on the node: it would relocate the node at the next boot`]
        : [],
      'no site-config left on the node',
    ),
  );
  // the MachineConfig names prepare renders, whatever its settings
  const wanted = renderMachineConfigs(ctx.sources, { internalIP: record?.internalIP ?? DEFAULT_INTERNAL_IP }).map(
    (mc) => mc.metadata.name,
  );
  return { items, wanted };
}

function certificateItem({ certificates: certs, unreadable }: CertificateScan, shelfDays: number): CheckItem {
  const gone = certs.filter((c) => c.fate === 'needs a person');
  const handled = certs.filter((c) => c.expiredOnArrival && c.fate !== 'needs a person');
  const problems = [
    ...(unreadable.length
      ? [`${unreadable.length} source(s) could not be read, so what they hold is not known: ${unreadable.join('; ')}`]
      : []),
    ...(gone.length
      ? [
          `${gone.length} certificate(s) expire within ${shelfDays} days and nothing renews them: ${gone
            .slice(0, 5)
            .map((c) => `${c.source} (${c.notAfter.slice(0, 10)})`)
            .join(', ')}${gone.length > 5 ? ', ...' : ''}`,
        ]
      : []),
  ];
  return item(
    'certificates',
    problems,
    `${certs.length} read; ${handled.length} expire within ${shelfDays} days and are renewed at the site`,
  );
}

export async function checkFactoryNode(ctx: CheckContext): Promise<CheckReport> {
  const now = ctx.clock.now();
  const node = await nodeChecks(ctx);
  const cluster = await clusterChecks(ctx, node.wanted);
  const scan = await certificateReports(ctx.fs, ctx.kube, now, ctx.shelfDays);
  const checks = [...cluster, ...node.items, certificateItem(scan, ctx.shelfDays)];
  const powerOnBy = powerOnByDate(scan.certificates);
  return {
    fit: checks.every((c) => c.verdict !== 'fail'),
    shelfDays: ctx.shelfDays,
    arrival: new Date(now.getTime() + ctx.shelfDays * DAY_MS).toISOString(),
    checks,
    ...scan,
    ...(powerOnBy && { powerOnBy }),
  };
}

/** The report as text: one line per check, then the certificates gone by arrival. */
export function renderCheck(report: CheckReport): string {
  const mark: Record<Verdict, string> = { ok: 'ok     ', warning: 'WARNING', fail: 'FAIL   ' };
  const lines = report.checks.map((c) => `${mark[c.verdict]} ${c.check}: ${c.detail}`);
  const expiring = report.certificates.filter((c) => c.expiredOnArrival);
  if (expiring.length) {
    lines.push(
      '',
      `Certificates expired on arrival (${report.shelfDays} days on the shelf, ${report.arrival.slice(0, 10)}):`,
    );
    for (const c of expiring)
      lines.push(`  ${c.notAfter.slice(0, 10)}  ${c.fate.padEnd(22)}  ${c.source} (${c.subject})`);
  }
  if (report.powerOnBy) lines.push('', powerOnByLine(report.powerOnBy));
  lines.push('', report.fit ? 'fit to ship' : 'NOT fit to ship: fix what FAIL names, then check again');
  return `${lines.join('\n')}\n`;
}
