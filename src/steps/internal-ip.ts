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
import type { Step, StepContext } from '../config/site.js';
import { firstNodeAddress, interfaceAddresses } from '../node/addresses.js';
import { formatCidr, parseCidr } from '../base/addresses.js';
import { BR_EX, DISPATCHER_SCRIPT, nodeIpFiles } from '../node/internal-ip.js';
import {
  fileChange,
  fileDrift,
  type HostFile,
  type ManagedFile,
  readHostFiles,
  writeManagedFile,
} from '../node/managed-file.js';
import { type DeclaredFiles, declaredFiles, driftFromRendered } from '../node/rendered-config.js';

function files(internalIP: string): (ManagedFile & { purpose: string })[] {
  // root-owned: NetworkManager refuses dispatcher scripts that others own or may write
  return nodeIpFiles(internalIP).map((f) => ({ ...f, uid: 0, gid: 0 }));
}

type AddressState = 'missing-interface' | 'absent' | 'behind' | 'first';

/** What the step reads: the rendered config's files, its own files, and where the internal IP stands on br-ex. */
export interface InternalIpView {
  declared?: DeclaredFiles;
  files: Record<string, HostFile>;
  address: { state: AddressState; first?: string };
}

async function addressState(ctx: StepContext, internalIP: string): Promise<InternalIpView['address']> {
  const internal = parseCidr(internalIP);
  const cidr = formatCidr(internal);
  const addresses = await interfaceAddresses(ctx.exec, BR_EX);
  if (addresses === undefined) return { state: 'missing-interface' };
  if (!addresses.includes(cidr)) return { state: 'absent' };
  const first = await firstNodeAddress(ctx.exec, BR_EX, internal.family);
  return first === cidr ? { state: 'first' } : { state: 'behind', ...(first !== undefined && { first }) };
}

export const internalIpStep: Step<InternalIpView | undefined> = {
  name: 'internal-ip',
  group: 'node',
  description:
    'NetworkManager dispatcher script keeping the internal IP first on `br-ex`; kubelet and CRI-O node-IP drop-ins',
  inputs: (site) => site.network.internalIP ?? null,

  async survey(ctx) {
    const internalIP = ctx.site.network.internalIP;
    if (internalIP === undefined) return undefined;
    const declared = await declaredFiles(ctx.fs);
    return {
      ...(declared && { declared }),
      files: await readHostFiles(
        ctx.fs,
        files(internalIP).map((f) => f.path),
      ),
      address: await addressState(ctx, internalIP),
    };
  },

  plan(view, site) {
    const internalIP = site.network.internalIP;
    if (internalIP === undefined || view === undefined)
      return { action: 'noop', reason: 'the site-config sets no internal IP' };
    const cidr = formatCidr(parseCidr(internalIP));
    const drift = files(internalIP)
      .map((f) => driftFromRendered(view.declared, f.path, f.content))
      .filter((r): r is string => r !== undefined);
    if (drift.length > 0)
      return {
        action: 'conflict',
        reason: `the internal IP ${cidr} differs from the one the factory MachineConfigs pin: ${drift.join('; ')}; change SNO_RELOCATE_INTERNAL_IP of the MachineConfigs instead`,
      };
    const changes: Change[] = [];
    for (const file of files(internalIP)) {
      const change = fileChange(view.files[file.path], file, file.purpose);
      if (change) changes.push(change);
    }
    const { address } = view;
    if (address.state === 'absent')
      changes.push({ action: 'set', target: BR_EX, summary: `add ${cidr} now, as the first address` });
    if (address.state === 'behind')
      changes.push({
        action: 'set',
        target: BR_EX,
        summary: `make ${cidr} the first address (${address.first} is ahead of it: OVN-Kubernetes would take that as the node IP)`,
      });
    if (changes.length > 0) return { action: 'change', summary: `pin the node IP to ${cidr} on ${BR_EX}`, changes };
    return {
      action: 'noop',
      reason:
        address.state === 'first'
          ? `${cidr} is the first address on ${BR_EX}, and kubelet and CRI-O are pinned to it`
          : `kubelet and CRI-O are pinned to ${cidr}; ${BR_EX} does not exist yet, and the dispatcher script adds the address when it comes up`,
    };
  },

  async apply(ctx, view) {
    const internalIP = ctx.site.network.internalIP!;
    const cidr = formatCidr(parseCidr(internalIP));
    for (const file of files(internalIP)) {
      if (fileDrift(view!.files[file.path], file).reasons.length === 0) continue;
      await writeManagedFile(ctx.fs, file);
      ctx.log.info({ file: file.path }, `written: ${file.path}`);
    }
    const { state } = view!.address;
    if (state === 'absent' || state === 'behind') {
      // the dispatcher script just written: the one implementation of "present, and first"
      await ctx.exec.run(ctx.fs.resolve(DISPATCHER_SCRIPT), [BR_EX, 'up']);
      ctx.log.info(
        { address: cidr, interface: BR_EX },
        state === 'absent'
          ? `internal IP ${cidr} added to ${BR_EX}, first`
          : `internal IP ${cidr} made the first address of ${BR_EX}`,
      );
    }
  },
};
