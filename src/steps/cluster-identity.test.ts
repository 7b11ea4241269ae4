import { describe, expect, it } from 'vitest';
import type { ClusterIdentity } from '../config/ibi/cluster-identity.js';
import type { ImageBasedSite } from '../config/ibi/image-based.js';
import type { Site } from '../config/site.js';
import { clusterIdentityStep } from './cluster-identity.js';

describe('cluster-identity decisions, on plain views', () => {
  const site = (imageBased?: ImageBasedSite) => ({ ...(imageBased && { imageBased }) }) as Site;
  const ID = '6b1a7d8e-94c2-4f0b-9a3e-2c5d7f1e0a11';
  const cluster: ClusterIdentity = {
    clusterID: 'f00dfeed-0000-4000-8000-000000000001',
    releaseImage: 'quay.io/openshift-release-dev/ocp-release@sha256:abc',
    infrastructureName: 'sno-x7k2p',
  };
  it.each<[string, ImageBasedSite | undefined, ClusterIdentity | undefined, string, string, object | undefined]>([
    ['a native site-config', undefined, undefined, 'noop', 'native site-config', undefined],
    [
      'the media names the cluster it is',
      { clusterID: cluster.clusterID!, unused: [], given: [] },
      cluster,
      'noop',
      'already',
      undefined,
    ],
    [
      'a new cluster ID',
      { clusterID: ID, unused: [], given: [] },
      cluster,
      'change',
      "site's cluster ID",
      { clusterID: ID },
    ],
    [
      'a cluster ID on a cluster without one',
      { clusterID: ID, unused: [], given: [] },
      {},
      'change',
      `+ spec.clusterID: ${ID}`,
      { clusterID: ID },
    ],
    [
      'the release registry the cluster has',
      { releaseRegistry: 'Quay.io', unused: [], given: [] },
      cluster,
      'noop',
      'already',
      undefined,
    ],
    [
      'another release registry',
      { releaseRegistry: 'registry.example.com', unused: [], given: [] },
      cluster,
      'conflict',
      'quay.io',
      undefined,
    ],
    [
      'a release image that cannot be read',
      { releaseRegistry: 'quay.io', unused: [], given: [] },
      {},
      'conflict',
      'cannot be checked',
      undefined,
    ],
    ['another infra_id', { infraID: 'sno-ab12c', unused: [], given: [] }, cluster, 'noop', 'warning: ', undefined],
  ])('%s: %s', (_, media, view, action, text, decision) => {
    const plan = clusterIdentityStep.plan({ ...(view && { cluster: view }) }, site(media));
    expect(plan.action).toBe(action);
    expect(JSON.stringify(plan)).toContain(text);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
