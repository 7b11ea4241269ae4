/** The cluster's API, through @kubernetes/client-node. */
import type { KubeConfig } from '@kubernetes/client-node';

export interface Kube {
  readonly config: KubeConfig;
}
