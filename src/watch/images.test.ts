import { describe, expect, it } from 'vitest';
import { onlyDigestMirrored, parseImage, registryKind } from './images.js';

describe('image references', () => {
  it.each([
    [
      'registry.redhat.io/redhat/redhat-operator-index:v4.16',
      { host: 'registry.redhat.io', repository: 'registry.redhat.io/redhat/redhat-operator-index', byDigest: false },
    ],
    [
      'registry.local:5000/ocp/release@sha256:abc',
      { host: 'registry.local:5000', repository: 'registry.local:5000/ocp/release', byDigest: true },
    ],
    ['localhost/x', { host: 'localhost', repository: 'localhost/x', byDigest: false }],
    ['library/busybox:1', { host: 'docker.io', repository: 'docker.io/library/busybox', byDigest: false }],
  ])('%s', (image, ref) => {
    expect(parseImage(image)).toEqual(ref);
  });

  const ctx = {
    siteRegistries: ['mirror.site:5000'],
    digestMirrorSources: ['quay.io/openshift-release-dev', '*.redhat.io'],
    tagMirrorSources: ['registry.redhat.io/redhat'],
    factoryRegistries: ['factory:5000'],
  };
  it.each([
    ['factory:5000/a/b:1', 'factory'],
    ['image-registry.openshift-image-registry.svc:5000/ns/img:latest', 'cluster'],
    ['mirror.site:5000/x:1', 'site'],
    ['quay.io/openshift-release-dev/ocp-release@sha256:1', 'mirrored'],
    ['quay.io/openshift-release-dev/ocp-release:4.16', 'unknown'],
    ['registry.redhat.io/redhat/redhat-operator-index:v4.16', 'mirrored'],
    ['registry.connect.redhat.io/ubi9@sha256:1', 'mirrored'],
  ])('%s comes from %s', (image, kind) => {
    expect(registryKind(ctx, image)).toBe(kind);
  });

  it('knows a tag pull that only digest mirrors cover', () => {
    expect(onlyDigestMirrored(ctx, 'quay.io/openshift-release-dev/ocp-release:4.16')).toBe(true);
    expect(onlyDigestMirrored(ctx, 'quay.io/openshift-release-dev/ocp-release@sha256:1')).toBe(false);
    expect(onlyDigestMirrored(ctx, 'registry.redhat.io/redhat/redhat-operator-index:v4.16')).toBe(false);
  });
});
