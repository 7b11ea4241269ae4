import { describe, expect, it } from 'vitest';
import { parseImage, pullSources, registryEntries } from './resolve.js';

const D = `sha256:${'a'.repeat(64)}`;

describe('parseImage', () => {
  it.each([
    [
      'quay.io/openshift-release-dev/ocp-release@' + D,
      { registry: 'quay.io', repository: 'openshift-release-dev/ocp-release', digest: D },
    ],
    ['registry:5000/a/b:v1', { registry: 'registry:5000', repository: 'a/b', tag: 'v1' }],
    ['localhost/a', { registry: 'localhost', repository: 'a' }],
    ['busybox', { registry: 'docker.io', repository: 'library/busybox' }],
    ['user/app:1', { registry: 'docker.io', repository: 'user/app', tag: '1' }],
    ['reg.example.com/a:v1@' + D, { registry: 'reg.example.com', repository: 'a', tag: 'v1', digest: D }],
  ])('%s', (image, ref) => expect(parseImage(image)).toEqual(ref));

  it.each(['', 'a b', 'quay.io/a@notadigest'])('refuses %j', (image) => expect(parseImage(image)).toBeUndefined());
});

/** where CRI-O asks, in order, as `location (mirror|source)` */
const asked = (image: string, entries: ReturnType<typeof registryEntries>) =>
  pullSources(parseImage(image)!, entries).map((s) => `${s.location}${s.mirror ? '' : ' (source)'}`);

describe('pullSources, as registries.conf resolves the rendered mirror sets', () => {
  const entries = registryEntries(
    [
      { source: 'quay.io/openshift-release-dev', mirrors: ['m1.site/ocp', 'm2.site/ocp'] },
      {
        source: 'quay.io/openshift-release-dev/ocp-release',
        mirrors: ['m3.site/release'],
        mirrorSourcePolicy: 'NeverContactSource',
      },
      { source: '*.apps.example.com', mirrors: ['m1.site/apps'] },
    ],
    [{ source: 'registry.redhat.io/redhat', mirrors: ['m1.site/redhat'] }],
  );

  it('tries the digest mirrors in order, the rest of the path appended, then the source', () => {
    expect(asked(`quay.io/openshift-release-dev/ocp-v4.0-art-dev@${D}`, entries)).toEqual([
      'm1.site/ocp/ocp-v4.0-art-dev',
      'm2.site/ocp/ocp-v4.0-art-dev',
      'quay.io/openshift-release-dev/ocp-v4.0-art-dev (source)',
    ]);
  });

  it('takes the longest matching prefix, and never asks a blocked source', () => {
    expect(asked(`quay.io/openshift-release-dev/ocp-release@${D}`, entries)).toEqual(['m3.site/release']);
  });

  it('asks digest-only mirrors nothing for a tag, and tag-only mirrors nothing for a digest', () => {
    expect(asked('quay.io/openshift-release-dev/ocp-v4.0-art-dev:latest', entries)).toEqual([
      'quay.io/openshift-release-dev/ocp-v4.0-art-dev (source)',
    ]);
    expect(asked('registry.redhat.io/redhat/redhat-operator-index:v4.16', entries)).toEqual([
      'm1.site/redhat/redhat-operator-index',
      'registry.redhat.io/redhat/redhat-operator-index (source)',
    ]);
    expect(asked(`registry.redhat.io/redhat/redhat-operator-index@${D}`, entries)).toEqual([
      'registry.redhat.io/redhat/redhat-operator-index (source)',
    ]);
    expect(asked(`quay.io/openshift-release-dev/ocp-release:4.16.9`, entries)).toEqual([]);
  });

  it('matches at a path boundary only, and a wildcard any host under its domain', () => {
    expect(asked(`quay.io/openshift-release-dev-extra/x@${D}`, entries)).toEqual([
      'quay.io/openshift-release-dev-extra/x (source)',
    ]);
    expect(asked(`shop.apps.example.com/web@${D}`, entries)).toEqual([
      'm1.site/apps/web',
      'shop.apps.example.com/web (source)',
    ]);
  });

  it('merges a digest and a tag mirror set of one source into one entry', () => {
    const merged = registryEntries(
      [{ source: 'quay.io/a', mirrors: ['m.site/a'] }],
      [{ source: 'quay.io/a', mirrors: ['t.site/a'], mirrorSourcePolicy: 'NeverContactSource' }],
    );
    expect(merged).toEqual([
      {
        prefix: 'quay.io/a',
        mirrors: [
          { location: 'm.site/a', pullFrom: 'digest-only' },
          { location: 't.site/a', pullFrom: 'tag-only' },
        ],
        blocked: true,
      },
    ]);
  });
});
