import { describe, expect, it } from 'vitest';
import { unmirroredCatalogs } from './mirrors.js';

const catalog = (name: string, image: string) => ({
  apiVersion: 'operators.coreos.com/v1alpha1',
  kind: 'CatalogSource',
  metadata: { name, namespace: 'openshift-marketplace' },
  spec: { image },
});
const digest = [{ source: 'registry.redhat.io/redhat', mirrors: ['mirror.example.com/redhat'] }];

describe('unmirroredCatalogs', () => {
  it('reports catalogs pulled by tag from a source with only digest mirrors', () => {
    const found = unmirroredCatalogs(
      [
        catalog('by-tag', 'registry.redhat.io/redhat/redhat-operator-index:v4.16'),
        catalog('by-digest', `registry.redhat.io/redhat/redhat-operator-index@sha256:${'a'.repeat(64)}`),
        catalog('elsewhere', 'quay.io/store/catalog:v1'),
        catalog('prefix-only', 'registry.redhat.io/redhat-extra/index:v1'),
        catalog('port', 'registry.redhat.io:443/redhat/index:v1'),
      ],
      digest,
      [],
    );
    expect(found).toEqual([
      'CatalogSource openshift-marketplace/by-tag pulls registry.redhat.io/redhat/redhat-operator-index:v4.16 by tag, and registry.redhat.io/redhat/redhat-operator-index has only digest mirrors',
    ]);
  });

  it('is quiet when a tag mirror covers the catalog', () => {
    expect(unmirroredCatalogs([catalog('by-tag', 'registry.redhat.io/redhat/index:v4.16')], digest, digest)).toEqual(
      [],
    );
  });
});
