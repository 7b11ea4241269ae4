/**
 * What a cluster (or an install-config, before installation) must be for the agent to relocate it,
 * as the relocation enhancement scopes it: one node, OVN-Kubernetes (it takes the node IP from
 * br-ex, where the internal IP lives), and platform none (no platform load balancer or VIPs that
 * hold the factory's addresses). Each unmet one is named, all of them at once.
 */
import type { Kube, KubeObject } from '../ports/kube.js';
import { inSubnet } from '../node/factory-record.js';

export const NETWORK_CONFIG = { apiVersion: 'config.openshift.io/v1', kind: 'Network', name: 'cluster' } as const;
export const INFRASTRUCTURE = {
  apiVersion: 'config.openshift.io/v1',
  kind: 'Infrastructure',
  name: 'cluster',
} as const;
export const MACHINE_CONFIG_API = 'machineconfiguration.openshift.io/v1';
const OVN = 'OVNKubernetes';

interface NetworkConfig extends KubeObject {
  spec?: { networkType?: string };
  status?: { networkType?: string };
}
interface Infrastructure extends KubeObject {
  status?: { platform?: string; platformStatus?: { type?: string }; controlPlaneTopology?: string };
}

/** The cluster's unmet preconditions; empty when prepare may go on. */
export async function clusterPreconditions(kube: Kube, nodes: readonly KubeObject[]): Promise<string[]> {
  const out: string[] = [];
  if (nodes.length !== 1)
    out.push(
      `one node: the cluster has ${nodes.length} (${nodes.map((n) => n.metadata.name).join(', ') || 'none'}); only single-node clusters are relocatable`,
    );
  const network = await kube.get<NetworkConfig>(NETWORK_CONFIG);
  const type = network?.status?.networkType ?? network?.spec?.networkType;
  if (type !== OVN)
    out.push(
      `OVN-Kubernetes: network.config/cluster says ${type ?? 'nothing'}; the internal IP on br-ex needs OVN-Kubernetes, which takes br-ex's first address as the node IP`,
    );
  const infra = await kube.get<Infrastructure>(INFRASTRUCTURE);
  const platform = infra?.status?.platformStatus?.type ?? infra?.status?.platform;
  if (platform !== 'None')
    out.push(
      `platform none: infrastructure.config/cluster says ${platform ?? 'nothing'}; a platform's VIPs and load balancers keep the factory's addresses`,
    );
  if (!(await kube.serves(MACHINE_CONFIG_API, 'MachineConfig')))
    out.push('the Machine Config Operator: the cluster serves no MachineConfig, so nothing can install the agent');
  return out;
}

interface InstallConfig {
  controlPlane?: { replicas?: number };
  compute?: { name?: string; replicas?: number }[];
  networking?: { networkType?: string; machineNetwork?: { cidr?: string }[] };
  platform?: Record<string, unknown>;
}

/**
 * An install-config's unmet preconditions, each with its path; the internal IP must be an address
 * of a machine network (the installer's default network type is OVNKubernetes).
 */
export function installConfigPreconditions(doc: unknown, internalIP: string): string[] {
  const config = (doc ?? {}) as InstallConfig;
  const out: string[] = [];
  const replicas = config.controlPlane?.replicas ?? 3;
  if (replicas !== 1) out.push(`$.controlPlane.replicas: ${replicas}; a relocatable cluster has one node`);
  (config.compute ?? []).forEach((c, i) => {
    if ((c.replicas ?? 3) !== 0)
      out.push(`$.compute[${i}].replicas: ${c.replicas ?? '3 (the default)'}; a single-node cluster has no workers`);
  });
  const type = config.networking?.networkType ?? OVN;
  if (type !== OVN) out.push(`$.networking.networkType: ${type}; the internal IP on br-ex needs ${OVN}`);
  const platforms = Object.keys(config.platform ?? {});
  if (platforms.length !== 1 || platforms[0] !== 'none')
    out.push(`$.platform: ${platforms.join(', ') || 'none given'}; a relocatable cluster uses platform none`);
  const networks = (config.networking?.machineNetwork ?? []).flatMap((n) => (n.cidr ? [n.cidr] : []));
  if (!networks.some((cidr) => inSubnet(internalIP, cidr)))
    out.push(
      `$.networking.machineNetwork: ${networks.join(', ') || 'none'} holds no network ${internalIP} belongs to (same prefix length); the internal IP is the node's install address`,
    );
  return out;
}
