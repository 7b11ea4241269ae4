/**
 * [node-ip-hint] The site's machine networks as the hint of OpenShift's nodeip-configuration.service:
 * `KUBELET_NODEIP_HINT=<network address> [<network address>]` in /etc/default/nodeip-configuration,
 * the line lifecycle-agent's post-pivot writes from machine_networks. The unit reads that file as its
 * EnvironmentFile and passes the value, unquoted, to `node-ip set` (machine-config-operator
 * templates/common/_base/units/nodeip-configuration.service.yaml), which takes the address whose
 * subnet holds a hint (baremetal-runtimecfg cmd/runtimecfg/node-ip.go); a network address never
 * equals a host address, which node-ip would skip as a VIP.
 *
 * How the hint and the internal IP coexist: kubelet and CRI-O are pinned to the internal IP by the
 * internal-ip step's drop-ins, which sort after the 20-nodenet.conf drop-ins nodeip-configuration
 * writes and so override them. The hint therefore only decides what nodeip-configuration itself
 * records, /run/nodeip-configuration/primary-ip among it, which ovs-configuration reads at boot to
 * find the interface to put on br-ex: the site's uplink. So each machine network is a site network,
 * never the internal IP's (refused at validate, rule machine-networks-are-site-networks): a hint in
 * the internal IP's subnet would name an address that exists only once br-ex is up.
 *
 * nodeip-configuration runs once per boot, before kubelet, and stops at once when primary-ip
 * exists, so the hint takes effect at the next boot; until then nothing reads it. A file the
 * machine-config daemon's current config declares is never written (conflict, exit 3).
 */
import type { LegacySiteStep, StepContext } from '../config/site.js';
import type { Change, PlanResult } from '../engine/step.js';
import { networkAddress } from '../base/addresses.js';
import { fileDiffers, type ManagedFile, planFile, writeManagedFile } from '../node/managed-file.js';
import { declaredFiles, driftFromRendered } from '../node/rendered-config.js';
import { expectSettled } from '../node/settled.js';

export const NODEIP_HINT_FILE = '/etc/default/nodeip-configuration';
const HEADER = '# Installed by sno-relocate from the site-config (spec.network.machineNetworks).';

/** The network address of each machine network, space separated, as nodeip-configuration takes them. */
export function renderNodeIpHint(machineNetworks: readonly string[]): string {
  const addresses = machineNetworks.map(networkAddress);
  return `${HEADER}\n# Read by nodeip-configuration.service at boot: it picks the address inside these networks.\nKUBELET_NODEIP_HINT=${addresses.join(' ')}\n`;
}

/** root-owned and world-readable, as the other files of /etc/default */
const hintFile = (networks: readonly string[]): ManagedFile => ({
  path: NODEIP_HINT_FILE,
  content: renderNodeIpHint(networks),
  mode: 0o644,
  uid: 0,
  gid: 0,
});

/** An earlier site's hint, which would point nodeip-configuration at a network this site does not have. */
async function leftOver(ctx: StepContext): Promise<boolean> {
  return (await ctx.fs.readText(NODEIP_HINT_FILE))?.startsWith(HEADER) ?? false;
}

export const nodeIpHintStep: LegacySiteStep = {
  name: 'node-ip-hint',
  group: 'node',
  description:
    "the site's machine networks as nodeip-configuration's hint (`KUBELET_NODEIP_HINT`); kubelet and CRI-O stay on the internal IP",
  inputs: (site) => site.network.machineNetworks,

  async plan(ctx): Promise<PlanResult> {
    const networks = ctx.site.network.machineNetworks;
    if (networks.length === 0) {
      if (await leftOver(ctx))
        return {
          action: 'change',
          summary: "remove an earlier site's node IP hint",
          changes: [
            { action: 'delete', target: NODEIP_HINT_FILE, summary: 'the site-config gives no machine networks' },
          ],
        };
      return {
        action: 'noop',
        reason: 'the site-config gives no machine networks: nodeip-configuration picks as before',
      };
    }
    const file = hintFile(networks);
    const drift = driftFromRendered(await declaredFiles(ctx.fs), file.path, file.content);
    if (drift) return { action: 'conflict', reason: drift };
    const change: Change | undefined = await planFile(
      ctx.fs,
      file,
      `nodeip-configuration's hint: ${networks.join(', ')}`,
    );
    if (!change) return { action: 'noop', reason: `nodeip-configuration's hint names ${networks.join(', ')}` };
    return { action: 'change', summary: `hint nodeip-configuration at ${networks.join(', ')}`, changes: [change] };
  },

  async apply(ctx) {
    const networks = ctx.site.network.machineNetworks;
    if (networks.length === 0) {
      await ctx.fs.remove(NODEIP_HINT_FILE);
      ctx.log.info({ file: NODEIP_HINT_FILE }, "an earlier site's node IP hint removed");
      return;
    }
    const file = hintFile(networks);
    if (!(await fileDiffers(ctx.fs, file))) return;
    await writeManagedFile(ctx.fs, file);
    ctx.log.info(
      { file: NODEIP_HINT_FILE, networks },
      `node IP hint written: ${networks.join(', ')} (read at the next boot)`,
    );
  },

  verify: (ctx) => expectSettled(nodeIpHintStep, ctx),
};
