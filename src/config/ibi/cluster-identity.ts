/**
 * The identity an image-based install's config media gives the site, and the cluster's as the
 * API tells it: what the cluster-identity step (src/steps/cluster-identity.ts) and the hub report
 * compare.
 */
import { INFRASTRUCTURE_CONFIG } from '../../kube/openshift.js';
import type { Kube, KubeObject, ObjectRef } from '../../ports/kube.js';
import type { ImageBasedSite } from './image-based.js';
import { MANIFEST_FILE } from './seed-reconfiguration.js';

export const CLUSTER_VERSION: ObjectRef = {
  apiVersion: 'config.openshift.io/v1',
  kind: 'ClusterVersion',
  name: 'version',
};

interface ClusterVersion extends KubeObject {
  spec?: { clusterID?: string };
  status?: { desired?: { image?: string } };
}

interface Infrastructure extends KubeObject {
  status?: { infrastructureName?: string };
}

/**
 * The registry of an image reference (host[:port]), as container tools read it: the first path
 * component when it looks like a host (a dot, a port, or localhost), else Docker Hub.
 */
export function registryOf(image: string): string {
  const slash = image.indexOf('/');
  const first = slash < 0 ? '' : image.slice(0, slash);
  if (first.includes('.') || first.includes(':') || first === 'localhost') return first.toLowerCase();
  return 'docker.io';
}

/** What the cluster says about its identity; undefined values were not there to read. */
export interface ClusterIdentity {
  clusterID?: string;
  releaseImage?: string;
  infrastructureName?: string;
}

export async function readClusterIdentity(kube: Kube): Promise<ClusterIdentity> {
  const [version, infrastructure] = await Promise.all([
    kube.get<ClusterVersion>(CLUSTER_VERSION),
    kube.get<Infrastructure>(INFRASTRUCTURE_CONFIG),
  ]);
  return {
    ...(version?.spec?.clusterID !== undefined && { clusterID: version.spec.clusterID }),
    ...(version?.status?.desired?.image !== undefined && { releaseImage: version.status.desired.image }),
    ...(infrastructure?.status?.infrastructureName !== undefined && {
      infrastructureName: infrastructure.status.infrastructureName,
    }),
  };
}

/** The media's infra_id when it differs from the cluster's infrastructure name, with the warning that says so. */
export function infraIdWarning(media: ImageBasedSite, cluster: ClusterIdentity): string | undefined {
  if (media.infraID === undefined || media.infraID === cluster.infrastructureName) return undefined;
  return `${MANIFEST_FILE} infra_id ${media.infraID} differs from the cluster's infrastructure name ${cluster.infrastructureName ?? '(none: no Infrastructure cluster status)'}: the factory's is kept (it is fixed at install time)`;
}
