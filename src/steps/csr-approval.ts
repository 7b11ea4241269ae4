/**
 * [csr-approval] Kubelet, started under the name node-name gave it, asks for a client certificate
 * (through the node-bootstrapper) and, once it has one, for a serving certificate. Nobody else
 * approves them on a single node that has just been moved, so the agent does: only this node's
 * requests, checked by src/kube/csr.ts (subject, usages, requestor, names: the node name, the site's static
 * addresses, the internal IP and the addresses br-ex holds now); every other request is left alone
 * and logged with the reason. Done when the node has an approved client and serving request, or
 * kubelet already holds valid certificates for its name.
 */
import type { Change } from '../engine/step.js';
import type { CsrKind } from '../kube/csr.js';
import {
  approveRequests,
  approveUntilIssued,
  judge,
  missing,
  othersPending,
  surveyCsrs,
  type CsrView,
} from '../node/kubelet-csrs.js';
import type { Step } from './step.js';

/** What the step does: approve these requests, say why the others are left alone, then wait for the kinds missing. */
export interface CsrApprovalDecision {
  approve: { name: string; kind: CsrKind; why: string }[];
  leftAlone: { name: string; why: string }[];
  /** the kinds kubelet has yet to file a request for: settle waits for them */
  waitFor: CsrKind[];
}

export const csrApprovalStep: Step<CsrView, CsrApprovalDecision> = {
  name: 'csr-approval',
  group: 'cluster',
  description: "approve this node's kubelet client and serving CSRs (subject, usages and SANs checked)",
  inputs: (site) => ({
    hostname: site.hostname ?? null,
    internalIP: site.network.internalIP ?? null,
    ...(site.network.secondaryInternalIP !== undefined && { secondaryInternalIP: site.network.secondaryInternalIP }),
    nmstate: site.network.nmstate,
  }),

  survey: surveyCsrs,

  plan(view) {
    const s = judge(view);
    if (s.toApprove.length === 0 && s.done.size === 2)
      return {
        action: 'noop',
        reason: `node ${view.node.hostname} has its client and serving certificates approved${othersPending(s)}`,
      };
    const changes: Change[] = s.toApprove.map((a) => ({
      action: 'approve',
      target: `CertificateSigningRequest ${a.name}`,
      summary: a.why,
    }));
    const waiting = missing(s);
    const decision: CsrApprovalDecision = {
      approve: s.toApprove,
      leftAlone: s.leftAlone,
      waitFor: waiting,
    };
    const wait = waiting.length > 0 ? `; then wait for kubelet's ${waiting.join(' and ')} request` : '';
    return {
      action: 'change',
      summary: `approve node ${view.node.hostname}'s kubelet certificate requests${wait}${othersPending(s)}`,
      changes,
      decision,
    };
  },

  async apply(ctx, decision) {
    await approveRequests(ctx, decision.approve, decision.leftAlone);
  },

  // kubelet files its serving request only once its client certificate is signed: each request of
  // this node's that comes meanwhile is approved as it comes, as apply approved the listed ones
  settle: (ctx) => approveUntilIssued(ctx),
};
