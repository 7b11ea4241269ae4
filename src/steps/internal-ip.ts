/**
 * [internal-ip] Keeps the node's internal IP on br-ex and pins kubelet and CRI-O to it: the
 * NetworkManager dispatcher script that re-adds the address whenever br-ex comes up, the kubelet
 * and CRI-O drop-ins, and the address itself at once when br-ex exists. Runs after the network
 * step, which may have re-created br-ex. Any drift in these files is planned and repaired.
 */
import type { Change } from '../engine/step.js';
import type { Step, StepContext } from '../config/site.js';
import { ensureAddress, interfaceAddresses } from '../node/addresses.js';
import { formatCidr, parseCidr } from '../base/addresses.js';
import { BR_EX, nodeIpFiles } from '../node/internal-ip.js';
import { fileDrift, type ManagedFile, planFile, writeManagedFile } from '../node/managed-file.js';
import { expectSettled } from '../node/settled.js';

function files(internalIP: string): (ManagedFile & { purpose: string })[] {
  // root-owned: NetworkManager refuses dispatcher scripts that others own or may write
  return nodeIpFiles(internalIP).map((f) => ({ ...f, uid: 0, gid: 0 }));
}

async function addressState(ctx: StepContext, cidr: string): Promise<'missing-interface' | 'present' | 'absent'> {
  const addresses = await interfaceAddresses(ctx.exec, BR_EX);
  if (addresses === undefined) return 'missing-interface';
  return addresses.includes(cidr) ? 'present' : 'absent';
}

export const internalIpStep: Step = {
  name: 'internal-ip',
  group: 'node',
  description:
    'NetworkManager dispatcher script keeping the internal IP on `br-ex`; kubelet and CRI-O node-IP drop-ins',
  inputs: (site) => site.network.internalIP ?? null,

  async plan(ctx) {
    const internalIP = ctx.site.network.internalIP;
    if (internalIP === undefined) return { action: 'noop', reason: 'the site-config sets no internal IP' };
    const cidr = formatCidr(parseCidr(internalIP));
    const changes: Change[] = [];
    for (const file of files(internalIP)) {
      const change = await planFile(ctx.fs, file, file.purpose);
      if (change) changes.push(change);
    }
    const address = await addressState(ctx, cidr);
    if (address === 'absent')
      changes.push({ action: 'set', target: BR_EX, summary: `add ${cidr} now (ip addr replace)` });
    if (changes.length > 0) return { action: 'change', summary: `pin the node IP to ${cidr} on ${BR_EX}`, changes };
    return {
      action: 'noop',
      reason:
        address === 'present'
          ? `${cidr} is on ${BR_EX}, and kubelet and CRI-O are pinned to it`
          : `kubelet and CRI-O are pinned to ${cidr}; ${BR_EX} does not exist yet, and the dispatcher script adds the address when it comes up`,
    };
  },

  async apply(ctx) {
    const internalIP = ctx.site.network.internalIP!;
    const cidr = formatCidr(parseCidr(internalIP));
    for (const file of files(internalIP)) {
      if ((await fileDrift(ctx.fs, file)).reasons.length === 0) continue;
      await writeManagedFile(ctx.fs, file);
      ctx.log.info({ file: file.path }, `written: ${file.path}`);
    }
    if ((await addressState(ctx, cidr)) === 'absent') {
      await ensureAddress(ctx.exec, cidr, BR_EX);
      ctx.log.info({ address: cidr, interface: BR_EX }, `internal IP ${cidr} added to ${BR_EX}`);
    }
  },

  verify: (ctx) => expectSettled(internalIpStep, ctx),
};
