/**
 * [cluster-identity] The identity an image-based install's config media gives the site, against
 * the cluster's:
 * - cluster_id becomes ClusterVersion spec.clusterID, as lifecycle-agent does after a recert: the
 *   hub's ClusterDeployment knows the cluster by it (the plan shows the change);
 * - release_registry is compared with the registry of the cluster's release image (ClusterVersion
 *   status.desired.image): equal is nothing to do; a different one is refused at plan, because the
 *   agent never rewrites release image references (imageDigestMirrors reach another registry);
 * - infra_id is compared with the Infrastructure's infrastructureName, which stays the factory's
 *   (it names cloud resources and was fixed at install time): a different one is a warning.
 * A native site-config has none of these: the step has nothing to do.
 */
import type { PlanResult } from '../engine/step.js';
import {
  CLUSTER_VERSION,
  infraIdWarning,
  readClusterIdentity,
  registryOf,
  type ClusterIdentity,
} from '../config/ibi/cluster-identity.js';
import type { ImageBasedSite } from '../config/ibi/image-based.js';
import { MANIFEST_FILE } from '../config/ibi/seed-reconfiguration.js';
import type { Step } from './step.js';

/** Why the media's identity cannot be the cluster's: its release registry is another. */
function conflictsOf(media: ImageBasedSite, cluster: ClusterIdentity): string[] {
  if (media.releaseRegistry === undefined) return [];
  if (cluster.releaseImage === undefined)
    return [
      `${MANIFEST_FILE} release_registry ${media.releaseRegistry} cannot be checked: ClusterVersion version has no status.desired.image`,
    ];
  const current = registryOf(cluster.releaseImage);
  if (current === media.releaseRegistry.toLowerCase()) return [];
  return [
    `${MANIFEST_FILE} release_registry ${media.releaseRegistry} is not ${current}, the registry of the cluster's release image (ClusterVersion status.desired.image): the agent does not rewrite release image references; give release_registry ${current} and reach ${media.releaseRegistry} through imageDigestMirrors (cluster-configuration/manifests/image-digest-mirror-set.json)`,
  ];
}

const unusedLine = (media: ImageBasedSite): string =>
  media.unused.length === 0
    ? ''
    : `; accepted, not used: ${media.unused.map((u) => u.field.split('.').pop()).join(', ')} (they re-sign every certificate of the cluster)`;

/** What the step reads: the media's identity (none for a native site-config) and the cluster's. */
export interface ClusterIdentityView {
  cluster?: ClusterIdentity;
}

/** What apply writes: ClusterVersion spec.clusterID. */
export interface ClusterIdentityDecision {
  clusterID: string;
}

export const clusterIdentityStep: Step<ClusterIdentityView, ClusterIdentityDecision> = {
  name: 'cluster-identity',
  group: 'cluster',
  description:
    "image-based config media: cluster_id into ClusterVersion spec.clusterID; release_registry and infra_id checked against the cluster's",
  inputs: (site) => ({
    clusterID: site.imageBased?.clusterID ?? null,
    releaseRegistry: site.imageBased?.releaseRegistry ?? null,
  }),

  async survey(ctx) {
    const media = ctx.site.imageBased;
    if (!media) return {};
    return { cluster: await readClusterIdentity(await ctx.kube()) };
  },

  plan(view, site): PlanResult<ClusterIdentityDecision> {
    const media = site.imageBased;
    if (!media || !view.cluster)
      return { action: 'noop', reason: 'a native site-config: the cluster keeps its identity' };
    const conflicts = conflictsOf(media, view.cluster);
    const warning = infraIdWarning(media, view.cluster);
    const also = `${unusedLine(media)}${warning ? `; warning: ${warning}` : ''}`;
    const warnings = warning ? { warnings: [warning] } : {};
    if (conflicts.length > 0) return { action: 'conflict', reason: conflicts.join('; '), ...warnings };
    const { clusterID } = media;
    const before = view.cluster.clusterID;
    if (clusterID === undefined || clusterID === before)
      return { action: 'noop', reason: `the cluster already has the media's identity${also}`, ...warnings };
    return {
      action: 'change',
      summary: `the site's cluster ID${also}`,
      changes: [
        {
          action: 'update',
          target: 'ClusterVersion version',
          summary: "the cluster ID the installer generated for this site (the hub's ClusterDeployment knows it)",
          diff: [...(before !== undefined ? [`- spec.clusterID: ${before}`] : []), `+ spec.clusterID: ${clusterID}`],
        },
      ],
      decision: { clusterID },
      ...warnings,
    };
  },

  async apply(ctx, { clusterID }) {
    await (await ctx.kube()).mergePatch(CLUSTER_VERSION, { spec: { clusterID } });
    ctx.log.info({ clusterID }, `ClusterVersion spec.clusterID is ${clusterID}`);
  },
};
