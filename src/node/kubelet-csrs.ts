/**
 * This node's kubelet certificate requests: whose they are (src/kube/csr.ts judges each against
 * the node's name and addresses), approving this node's and leaving every other alone, and the
 * wait until kubelet holds both a client and a serving certificate. The csr-approval step runs it
 * after kubelet starts; node-rename waits on it once kubelet runs under the new name.
 */
import { X509Certificate } from 'node:crypto';
import { StepError } from '../base/errors.js';
import { internalIPs, type Site } from '../config/site.js';
import type { StepContext as EngineStepContext } from '../engine/step.js';
import { csrState, judgeCsr, type CsrKind, type CsrObject, type NodeIdentity } from '../kube/csr.js';
import { canonicalIp, isLinkLocal, parseCidr } from '../base/addresses.js';
import { interfaceAddresses } from './addresses.js';
import { CSR_WAIT_SECONDS } from '../base/timeouts.js';
import { registeredNodeName } from './node-name.js';
import { readRenameRecord } from './rename.js';
import { BR_EX } from './internal-ip.js';
import { pinnedNodeAddresses } from './dnsmasq.js';
import { pollUntil } from '../ports/clock.js';
import type { KubeObject } from '../ports/kube.js';

type StepContext = EngineStepContext<Site>;

const CSR_API = 'certificates.k8s.io/v1';
export const CSR_WAIT_MS = CSR_WAIT_SECONDS * 1000;
/** the certificates kubelet writes once a request is signed */
export const KUBELET_CERTIFICATES: Record<CsrKind, string> = {
  client: '/var/lib/kubelet/pki/kubelet-client-current.pem',
  serving: '/var/lib/kubelet/pki/kubelet-server-current.pem',
};

type Csr = KubeObject & CsrObject;

export async function nodeIdentity(ctx: StepContext): Promise<NodeIdentity> {
  // the name kubelet registers under: its certificates are requested for it
  const hostname = await registeredNodeName(ctx.fs);
  if (!hostname)
    throw new StepError('csr-approval: the node has no hostname to match requests against', { step: 'csr-approval' });
  const ips = new Set<string>();
  const site = internalIPs(ctx.site.network);
  const internal = site.length > 0 ? site.map((ip) => parseCidr(ip).ip) : await pinnedNodeAddresses(ctx.fs);
  for (const ip of internal) ips.add(ip);
  for (const iface of ctx.site.network.nmstate.interfaces ?? []) {
    for (const family of [iface.ipv4, iface.ipv6]) for (const a of family?.address ?? []) ips.add(canonicalIp(a.ip));
  }
  // what the node holds now: a DHCP or SLAAC site names no address, and kubelet's serving request
  // carries the one br-ex was given (link-local addresses are never a node IP)
  for (const cidr of (await interfaceAddresses(ctx.exec, BR_EX)) ?? []) {
    const { ip } = parseCidr(cidr);
    if (!isLinkLocal(ip)) ips.add(canonicalIp(ip));
  }
  // after a rename, kubelet asks for its new name's client certificate as the former node
  const record = await readRenameRecord(ctx.fs, ctx.stateDir);
  return {
    hostname,
    ips: [...ips],
    ...(record?.to === hostname && record.from !== hostname && { former: record.from }),
  };
}

/** Kinds for which kubelet already holds a valid certificate under this node's name. */
async function issuedOnDisk(ctx: StepContext, node: NodeIdentity): Promise<Set<CsrKind>> {
  const issued = new Set<CsrKind>();
  for (const kind of ['client', 'serving'] as const) {
    const pem = await ctx.fs.readText(KUBELET_CERTIFICATES[kind]);
    if (!pem?.includes('BEGIN CERTIFICATE')) continue;
    try {
      const cert = new X509Certificate(pem);
      const valid = new Date(cert.validTo).getTime() > ctx.clock.now().getTime();
      if (valid && cert.subject.split('\n').includes(`CN=system:node:${node.hostname}`)) issued.add(kind);
    } catch {
      // unreadable: kubelet will ask again, and that request is approved here
    }
  }
  return issued;
}

/** What the step reads: this node's identity, the cluster's requests, and kubelet's certificates. */
export interface CsrView {
  node: NodeIdentity;
  csrs: Csr[];
  /** kinds for which kubelet already holds a valid certificate under this node's name */
  issued: CsrKind[];
}

export interface Judged {
  toApprove: { name: string; kind: CsrKind; why: string }[];
  leftAlone: { name: string; why: string }[];
  /** kinds this node already has: an approved request of its own, or a certificate on disk */
  done: Set<CsrKind>;
}

export function judge(view: CsrView): Judged {
  const result: Judged = { toApprove: [], leftAlone: [], done: new Set(view.issued) };
  for (const csr of view.csrs) {
    const state = csrState(csr);
    if (state === 'denied' || state === 'failed') continue;
    const verdict = judgeCsr(csr, view.node);
    if (state === 'approved') {
      if (verdict.approve) result.done.add(verdict.kind);
    } else if (verdict.approve)
      result.toApprove.push({ name: csr.metadata.name, kind: verdict.kind, why: verdict.why });
    else result.leftAlone.push({ name: csr.metadata.name, why: verdict.why });
  }
  return result;
}

/** Pending requests the step leaves alone, as its result names them (`status`): never approved. */
export function othersPending(s: Judged): string {
  if (s.leftAlone.length === 0) return '';
  const listed = s.leftAlone.slice(0, 5).map((l) => `${l.name} (${l.why})`);
  const more = s.leftAlone.length > listed.length ? `, and ${s.leftAlone.length - listed.length} more` : '';
  return `; pending requests left alone (not approved): ${listed.join(', ')}${more}`;
}

export const missing = (s: Judged): CsrKind[] =>
  (['client', 'serving'] as const).filter((k) => !s.done.has(k) && !s.toApprove.some((a) => a.kind === k));

/** Approves these requests of this node's, saying first why each of the others is left alone. */
export async function approveRequests(
  ctx: StepContext,
  toApprove: Judged['toApprove'],
  leftAlone: Judged['leftAlone'],
): Promise<void> {
  const kube = await ctx.kube();
  for (const l of leftAlone) ctx.log.info({ csr: l.name, reason: l.why }, `CSR ${l.name} left alone: ${l.why}`);
  for (const a of toApprove) {
    await kube.approveCsr(a.name, 'SnoRelocateApproved', `approved by sno-relocate: ${a.why}`);
    ctx.log.info({ csr: a.name, kind: a.kind, reason: a.why }, `CSR ${a.name} approved: ${a.why}`);
  }
}

async function approve(ctx: StepContext, view: CsrView, reported: Set<string>): Promise<Judged> {
  const s = judge(view);
  const unreported = s.leftAlone.filter((l) => !reported.has(l.name));
  for (const l of unreported) reported.add(l.name);
  await approveRequests(ctx, s.toApprove, unreported);
  for (const a of s.toApprove) s.done.add(a.kind);
  return s;
}

/** What the step reads: this node's identity, the cluster's requests, and kubelet's certificates. */
export async function surveyCsrs(ctx: StepContext): Promise<CsrView> {
  const node = await nodeIdentity(ctx);
  const csrs = await (await ctx.kube()).list<Csr>(CSR_API, 'CertificateSigningRequest');
  return { node, csrs, issued: [...(await issuedOnDisk(ctx, node))] };
}

/**
 * Kubelet files its serving request only once its client certificate is signed: each request of
 * this node's that comes while waiting is approved as it comes, until both kinds are. Also what
 * node-rename waits for once kubelet runs under the new name.
 */
export async function approveUntilIssued(ctx: StepContext): Promise<void> {
  const reported = new Set<string>();
  let last: Judged | undefined;
  let node: NodeIdentity | undefined;
  const settled = await pollUntil(
    ctx.clock,
    async () => {
      const view = await surveyCsrs(ctx);
      node = view.node;
      last = await approve(ctx, view, reported);
      return last.done.size === 2 ? true : undefined;
    },
    { timeoutMs: CSR_WAIT_MS, intervalMs: 500, maxIntervalMs: 5_000 },
  );
  if (!settled) {
    const waiting = last ? missing(last).join(' and ') : 'client and serving';
    throw new StepError(
      `csr-approval: kubelet filed no ${waiting} request for node ${node?.hostname ?? '(this host)'} within ${CSR_WAIT_MS / 60_000} min`,
      { step: 'csr-approval', retryable: true },
    );
  }
}
