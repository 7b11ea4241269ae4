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
import type { Step } from './step.js';
import type { PlanResult } from '../engine/step.js';
import { networkAddress } from '../base/addresses.js';
import { fileChange, type HostFile, type ManagedFile, readHostFile, writeManagedFile } from '../node/managed-file.js';
import { type DeclaredFiles, declaredFiles, driftFromRendered } from '../node/rendered-config.js';

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

/** What the step reads: the hint file as the host holds it, and the rendered config's files. */
export interface NodeIpHintView {
  hint?: HostFile;
  declared?: DeclaredFiles;
}

/** What apply does: write the hint for `networks`, or remove an earlier site's. */
export type NodeIpHintDecision =
  { action: 'write'; file: ManagedFile; networks: string[] } | { action: 'remove'; path: string };

export const nodeIpHintStep: Step<NodeIpHintView, NodeIpHintDecision> = {
  name: 'node-ip-hint',
  group: 'node',
  description:
    "the site's machine networks as nodeip-configuration's hint (`KUBELET_NODEIP_HINT`); kubelet and CRI-O stay on the internal IP",
  inputs: (site) => site.network.machineNetworks,

  async survey(ctx) {
    const hint = await readHostFile(ctx.fs, NODEIP_HINT_FILE);
    const declared = await declaredFiles(ctx.fs);
    return { ...(hint && { hint }), ...(declared && { declared }) };
  },

  plan(view, site): PlanResult<NodeIpHintDecision> {
    const networks = site.network.machineNetworks;
    if (networks.length === 0) {
      // an earlier site's hint would point nodeip-configuration at a network this site does not have
      if (view.hint?.content.startsWith(HEADER))
        return {
          action: 'change',
          summary: "remove an earlier site's node IP hint",
          changes: [
            { action: 'delete', target: NODEIP_HINT_FILE, summary: 'the site-config gives no machine networks' },
          ],
          decision: { action: 'remove', path: NODEIP_HINT_FILE },
        };
      return {
        action: 'noop',
        reason: 'the site-config gives no machine networks: nodeip-configuration picks as before',
      };
    }
    const file = hintFile(networks);
    const drift = driftFromRendered(view.declared, file.path, file.content);
    if (drift) return { action: 'conflict', reason: drift };
    const change = fileChange(view.hint, file, `nodeip-configuration's hint: ${networks.join(', ')}`);
    if (!change) return { action: 'noop', reason: `nodeip-configuration's hint names ${networks.join(', ')}` };
    return {
      action: 'change',
      summary: `hint nodeip-configuration at ${networks.join(', ')}`,
      changes: [change],
      decision: { action: 'write', file, networks: [...networks] },
    };
  },

  async apply(ctx, decision) {
    if (decision.action === 'remove') {
      await ctx.fs.remove(decision.path);
      ctx.log.info({ file: decision.path }, "an earlier site's node IP hint removed");
      return;
    }
    const { file, networks } = decision;
    await writeManagedFile(ctx.fs, file);
    ctx.log.info({ file: file.path, networks }, `node IP hint written: ${networks.join(', ')} (read at the next boot)`);
  },
};
