/**
 * [internal-ip] Keeps the node's internal IP on br-ex and pins kubelet and CRI-O to it: the
 * NetworkManager dispatcher script that re-adds the address whenever br-ex comes up, the kubelet
 * and CRI-O drop-ins, and the address itself at once when br-ex exists. Runs after the network
 * step, which may have re-created br-ex. Any drift in these files is planned and repaired. The
 * factory MachineConfigs carry the same files, so the machine-config daemon owns them: an internal
 * IP other than theirs is refused (exit 3) rather than written as drift the daemon would report.
 * Verified by surveying again: the internal IP is the first address OVN-Kubernetes considers on br-ex.
 */
import type { Change } from '../engine/step.js';
import { internalIPs } from '../config/site.js';
import type { Step, StepContext } from './step.js';
import { firstNodeAddress, interfaceAddresses } from '../node/addresses.js';
import { formatCidr, parseCidr } from '../base/addresses.js';
import { BR_EX, DISPATCHER_SCRIPT, nodeIpFiles } from '../node/internal-ip.js';
import { fileChange, type HostFile, type ManagedFile, readHostFiles, writeManagedFile } from '../node/managed-file.js';
import { type DeclaredFiles, declaredFiles, driftFromRendered } from '../node/rendered-config.js';

function files(internals: readonly string[]): (ManagedFile & { purpose: string })[] {
  // root-owned: NetworkManager refuses dispatcher scripts that others own or may write
  return nodeIpFiles(internals).map((f) => ({ ...f, uid: 0, gid: 0 }));
}

type AddressState = 'missing-interface' | 'absent' | 'behind' | 'first';

/** Where one internal IP stands on br-ex, among the addresses of its family. */
interface AddressView {
  cidr: string;
  state: AddressState;
  first?: string;
}

/** What the step reads: the rendered config's files, its own files, and where each internal IP stands on br-ex. */
export interface InternalIpView {
  declared?: DeclaredFiles;
  files: Record<string, HostFile>;
  /** one per internal IP, the primary family's first */
  addresses: readonly AddressView[];
}

async function addressState(ctx: StepContext, internalIP: string, present: string[] | undefined): Promise<AddressView> {
  const internal = parseCidr(internalIP);
  const cidr = formatCidr(internal);
  if (present === undefined) return { cidr, state: 'missing-interface' };
  if (!present.includes(cidr)) return { cidr, state: 'absent' };
  const first = await firstNodeAddress(ctx.exec, BR_EX, internal.family);
  return first === cidr ? { cidr, state: 'first' } : { cidr, state: 'behind', ...(first !== undefined && { first }) };
}

/** An internal IP apply puts first on br-ex: absent from it, or behind another address of its family. */
interface MovedAddress {
  cidr: string;
  state: 'absent' | 'behind';
}

/**
 * What apply does: write `files` (those that differ), then, when `move` names addresses, run the
 * dispatcher script for br-ex, which puts each first of its family.
 */
export interface InternalIpDecision {
  files: ManagedFile[];
  move: MovedAddress[];
}

const listed = (cidrs: readonly string[]) => cidrs.join(' and ');

export const internalIpStep: Step<InternalIpView | undefined, InternalIpDecision> = {
  name: 'internal-ip',
  group: 'node',
  description:
    'NetworkManager dispatcher script keeping the internal IP (one per family, dual-stack) first on `br-ex`; kubelet and CRI-O node-IP drop-ins',
  // a single-stack site hashes as before: a done step stays done across an agent update
  inputs: (site) =>
    site.network.secondaryInternalIP === undefined ? (site.network.internalIP ?? null) : internalIPs(site.network),

  async survey(ctx) {
    const internals = internalIPs(ctx.site.network);
    if (internals.length === 0) return undefined;
    const declared = await declaredFiles(ctx.fs);
    const present = await interfaceAddresses(ctx.exec, BR_EX);
    const addresses: AddressView[] = [];
    for (const ip of internals) addresses.push(await addressState(ctx, ip, present));
    return {
      ...(declared && { declared }),
      files: await readHostFiles(
        ctx.fs,
        files(internals).map((f) => f.path),
      ),
      addresses,
    };
  },

  plan(view, site) {
    const internals = internalIPs(site.network);
    if (internals.length === 0 || view === undefined)
      return { action: 'noop', reason: 'the site-config sets no internal IP' };
    const cidrs = listed(internals.map((ip) => formatCidr(parseCidr(ip))));
    const drift = files(internals)
      .map((f) => driftFromRendered(view.declared, f.path, f.content))
      .filter((r): r is string => r !== undefined);
    if (drift.length > 0)
      return {
        action: 'conflict',
        reason: `the internal IP ${cidrs} differs from the one the factory MachineConfigs pin: ${drift.join('; ')}; change SNO_RELOCATE_INTERNAL_IP of the MachineConfigs instead`,
      };
    const changes: Change[] = [];
    const decision: InternalIpDecision = { files: [], move: [] };
    for (const { purpose, ...file } of files(internals)) {
      const change = fileChange(view.files[file.path], file, purpose);
      if (!change) continue;
      changes.push(change);
      decision.files.push(file);
    }
    for (const { cidr, state, first } of view.addresses) {
      if (state !== 'absent' && state !== 'behind') continue;
      decision.move.push({ cidr, state });
      changes.push({
        action: 'set',
        target: BR_EX,
        summary:
          state === 'absent'
            ? `add ${cidr} now, as the first address of its family`
            : `make ${cidr} the first address of its family (${first} is ahead of it: OVN-Kubernetes would take that as the node IP)`,
      });
    }
    if (changes.length > 0)
      return { action: 'change', summary: `pin the node IP to ${cidrs} on ${BR_EX}`, changes, decision };
    return {
      action: 'noop',
      reason: view.addresses.every((a) => a.state === 'first')
        ? `${cidrs} ${internals.length > 1 ? 'are each the first address of its family' : 'is the first address'} on ${BR_EX}, and kubelet and CRI-O are pinned to ${internals.length > 1 ? 'them' : 'it'}`
        : `kubelet and CRI-O are pinned to ${cidrs}; ${BR_EX} does not exist yet, and the dispatcher script adds the address when it comes up`,
    };
  },

  async apply(ctx, { files: written, move }) {
    for (const file of written) {
      await writeManagedFile(ctx.fs, file);
      ctx.log.info({ file: file.path }, `written: ${file.path}`);
    }
    if (move.length === 0) return;
    // the dispatcher script as planned: the one implementation of "present, and first" (each family)
    await ctx.exec.run(ctx.fs.resolve(DISPATCHER_SCRIPT), [BR_EX, 'up']);
    for (const { cidr, state } of move)
      ctx.log.info(
        { address: cidr, interface: BR_EX },
        state === 'absent'
          ? `internal IP ${cidr} added to ${BR_EX}, first of its family`
          : `internal IP ${cidr} made the first address of its family on ${BR_EX}`,
      );
  },
};
