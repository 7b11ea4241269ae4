/**
 * [internal-ip] Keeps the node's internal IP on br-ex and pins kubelet and CRI-O to it: the
 * NetworkManager dispatcher script that re-adds the address whenever br-ex comes up, the kubelet
 * and CRI-O drop-ins, and the address itself at once when br-ex exists. Runs after the network
 * step, which may have re-created br-ex. Any drift in these files is planned and repaired. The
 * factory MachineConfigs carry the same files, so the machine-config daemon owns them: an internal
 * IP other than theirs is refused (exit 3) rather than written as drift the daemon would report.
 * Verified: the internal IP is the first address OVN-Kubernetes considers on br-ex.
 */
import type { Change } from '../engine/step.js';
import type { LegacySiteStep, StepContext } from '../config/site.js';
import { firstNodeAddress, interfaceAddresses } from '../node/addresses.js';
import { formatCidr, parseCidr } from '../base/addresses.js';
import { BR_EX, DISPATCHER_SCRIPT, nodeIpFiles } from '../node/internal-ip.js';
import { fileDiffers, type ManagedFile, planFile, writeManagedFile } from '../node/managed-file.js';
import { declaredFiles, driftFromRendered } from '../node/rendered-config.js';
import { expectSettled } from '../node/settled.js';

function files(internalIP: string): (ManagedFile & { purpose: string })[] {
  // root-owned: NetworkManager refuses dispatcher scripts that others own or may write
  return nodeIpFiles(internalIP).map((f) => ({ ...f, uid: 0, gid: 0 }));
}

type AddressState = 'missing-interface' | 'absent' | 'behind' | 'first';

async function addressState(ctx: StepContext, internalIP: string): Promise<{ state: AddressState; first?: string }> {
  const internal = parseCidr(internalIP);
  const cidr = formatCidr(internal);
  const addresses = await interfaceAddresses(ctx.exec, BR_EX);
  if (addresses === undefined) return { state: 'missing-interface' };
  if (!addresses.includes(cidr)) return { state: 'absent' };
  const first = await firstNodeAddress(ctx.exec, BR_EX, internal.family);
  return first === cidr ? { state: 'first' } : { state: 'behind', ...(first !== undefined && { first }) };
}

export const internalIpStep: LegacySiteStep = {
  name: 'internal-ip',
  group: 'node',
  description:
    'NetworkManager dispatcher script keeping the internal IP first on `br-ex`; kubelet and CRI-O node-IP drop-ins',
  inputs: (site) => site.network.internalIP ?? null,

  async plan(ctx) {
    const internalIP = ctx.site.network.internalIP;
    if (internalIP === undefined) return { action: 'noop', reason: 'the site-config sets no internal IP' };
    const cidr = formatCidr(parseCidr(internalIP));
    const declared = await declaredFiles(ctx.fs);
    const drift = files(internalIP)
      .map((f) => driftFromRendered(declared, f.path, f.content))
      .filter((r): r is string => r !== undefined);
    if (drift.length > 0)
      return {
        action: 'conflict',
        reason: `the internal IP ${cidr} differs from the one the factory MachineConfigs pin: ${drift.join('; ')}; change SNO_RELOCATE_INTERNAL_IP of the MachineConfigs instead`,
      };
    const changes: Change[] = [];
    for (const file of files(internalIP)) {
      const change = await planFile(ctx.fs, file, file.purpose);
      if (change) changes.push(change);
    }
    const address = await addressState(ctx, internalIP);
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

  async apply(ctx) {
    const internalIP = ctx.site.network.internalIP!;
    const cidr = formatCidr(parseCidr(internalIP));
    for (const file of files(internalIP)) {
      if (!(await fileDiffers(ctx.fs, file))) continue;
      await writeManagedFile(ctx.fs, file);
      ctx.log.info({ file: file.path }, `written: ${file.path}`);
    }
    const address = await addressState(ctx, internalIP);
    if (address.state === 'absent' || address.state === 'behind') {
      // the dispatcher script just written: the one implementation of "present, and first"
      await ctx.exec.run(ctx.fs.resolve(DISPATCHER_SCRIPT), [BR_EX, 'up']);
      ctx.log.info(
        { address: cidr, interface: BR_EX },
        address.state === 'absent'
          ? `internal IP ${cidr} added to ${BR_EX}, first`
          : `internal IP ${cidr} made the first address of ${BR_EX}`,
      );
    }
  },

  // planning again covers the order: an internal IP behind another address is a change left
  verify: (ctx) => expectSettled(internalIpStep, ctx),
};
