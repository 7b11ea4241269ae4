/**
 * A test cluster's real kube-apiserver, on the host, as a VM's node reaches it: through qemu's relay
 * of a management-network address to the host's loopback (BootOptions.hostForwards), with the
 * node's kubeconfig naming that address and a name the server's certificate holds.
 */
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import type { ClusterEnv } from '../cluster/env.js';
import type { HostForward } from './vm.js';

/** where the guest finds the API server: the host's loopback, relayed by qemu */
export const GUEST_API = { address: '10.0.2.100', port: 6443 };

/** The relay of GUEST_API to the cluster's port on the host, for bootVm's hostForwards. */
export const guestApiForward = (env: ClusterEnv): HostForward => ({
  ...GUEST_API,
  hostPort: Number(new URL(env.cluster.server).port),
});

/** The host's admin kubeconfig as the node's: the relayed address, a name the server's certificate holds. */
export function guestKubeconfig(env: ClusterEnv): string {
  const kc = yaml.load(readFileSync(env.cluster.kubeconfigPath, 'utf8')) as {
    clusters: { cluster: Record<string, string> }[];
  };
  for (const c of kc.clusters) {
    c.cluster.server = `https://${GUEST_API.address}:${GUEST_API.port}`;
    c.cluster['tls-server-name'] = 'kubernetes';
  }
  return yaml.dump(kc);
}
