/**
 * [ip-families] The site-config's IP families against the cluster's. A dual-stack cluster's
 * primary family is the family of the first entry of the Network config's clusterNetwork (and
 * serviceNetwork, which the installer orders alike): kubelet's node IPs, the machine networks and
 * every component's primary address must list that family first, and an IPv4 node IP on an
 * IPv6-only cluster (or one family on a dual-stack cluster) leaves the node without its pod network.
 * So the families of spec.network.internalIP, in their order, must be the cluster's, and
 * spec.network.machineNetworks, where it names both, must list them in the same order. A mismatch
 * is refused (exit 3) naming both orders; the step never changes the cluster, whose families are
 * fixed at install time.
 */
import type { PlanResult } from '../engine/step.js';
import { parseCidr } from '../base/addresses.js';
import { internalIPs, type Site } from '../config/site.js';
import type { Step } from './step.js';
import type { KubeObject, ObjectRef } from '../ports/kube.js';

export const NETWORK_CONFIG: ObjectRef = { apiVersion: 'config.openshift.io/v1', kind: 'Network', name: 'cluster' };

interface NetworkConfig extends KubeObject {
  spec?: { clusterNetwork?: { cidr?: string }[]; serviceNetwork?: string[] };
}

type Family = 'IPv4' | 'IPv6';

/** What the step reads: the families of the cluster's networks in their order (absent: no Network config). */
export interface IpFamiliesView {
  clusterNetwork?: readonly Family[];
  serviceNetwork?: readonly Family[];
}

/** The IP families of these CIDRs, each once, in the order they first appear. */
export function familiesOf(cidrs: readonly string[]): Family[] {
  const out: Family[] = [];
  for (const cidr of cidrs) {
    const family: Family = parseCidr(cidr).family === 4 ? 'IPv4' : 'IPv6';
    if (!out.includes(family)) out.push(family);
  }
  return out;
}

const order = (families: readonly Family[]) => (families.length > 1 ? families.join(', ') : `${families[0]} only`);

/**
 * The decision: what the site-config lists against what the cluster lists. The step only checks:
 * its plan is noop or conflict, never a change (its decision type is `never`).
 */
export function compareFamilies(view: IpFamiliesView, site: Pick<Site, 'network'>): PlanResult<never> {
  const cluster = view.clusterNetwork?.length ? view.clusterNetwork : view.serviceNetwork;
  if (!cluster?.length)
    return { action: 'noop', reason: 'the cluster has no Network config naming its networks to compare with' };
  const source = view.clusterNetwork?.length ? 'spec.clusterNetwork' : 'spec.serviceNetwork';
  const clusterOrder = `the cluster's Network config (${source}) is ${order(cluster)}`;
  const internal = familiesOf(internalIPs(site.network));
  const problems: string[] = [];
  if (internal.length > 0 && internal.join() !== cluster.join())
    problems.push(`spec.network.internalIP is ${order(internal)}`);
  const machine = familiesOf(site.network.machineNetworks);
  if (machine.length > 1 && machine.join() !== cluster.join())
    problems.push(`spec.network.machineNetworks is ${order(machine)}`);
  else if (machine.length === 1 && !cluster.includes(machine[0]!))
    problems.push(`spec.network.machineNetworks is ${order(machine)}`);
  if (problems.length > 0)
    return {
      action: 'conflict',
      reason: `${problems.join(' and ')}, but ${clusterOrder}: list one address per family of the cluster, its primary family first`,
    };
  return {
    action: 'noop',
    reason:
      internal.length > 0
        ? `the site-config's families match: ${clusterOrder}`
        : `${clusterOrder}; the site-config names no internal IP`,
  };
}

export const ipFamiliesStep: Step<IpFamiliesView, never> = {
  name: 'ip-families',
  group: 'cluster',
  description:
    "the site-config's IP families (internal IPs, machine networks) in the order of the cluster's Network config; a mismatch is refused",
  inputs: (site) => ({ internalIPs: internalIPs(site.network), machineNetworks: site.network.machineNetworks }),

  async survey(ctx) {
    const network = await (await ctx.kube()).get<NetworkConfig>(NETWORK_CONFIG);
    const clusterNetwork = (network?.spec?.clusterNetwork ?? []).flatMap((n) => (n.cidr ? [n.cidr] : []));
    const serviceNetwork = network?.spec?.serviceNetwork ?? [];
    return {
      ...(clusterNetwork.length > 0 && { clusterNetwork: familiesOf(clusterNetwork) }),
      ...(serviceNetwork.length > 0 && { serviceNetwork: familiesOf(serviceNetwork) }),
    };
  },

  plan: (view, site) => compareFamilies(view, site),
};
