import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import { type MirrorsView, mirrorsStep, unmirroredCatalogs } from './mirrors.js';

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

describe('mirrors decisions', () => {
  const all = { idms: true, itms: true, icsp: true };
  const tag = [{ source: 'quay.io/store', mirrors: ['mirror.example.com/store'] }];
  const owned = (kind: string, name: string, spec: Record<string, unknown>) => ({
    apiVersion: 'x',
    kind,
    metadata: { name },
    spec,
  });
  const idms = owned('ImageDigestMirrorSet', 'sno-relocate-digest-mirrors', {
    imageDigestMirrors: [{ source: 'registry.redhat.io/redhat', mirrors: ['mirror.example.com/redhat'] }],
  });
  const view = (parts: Partial<MirrorsView> = {}): MirrorsView => ({
    serves: all,
    owned: [],
    foreign: [],
    catalogs: [],
    ...parts,
  });
  const IDMS_REF = {
    apiVersion: 'config.openshift.io/v1',
    kind: 'ImageDigestMirrorSet',
    name: 'sno-relocate-digest-mirrors',
  };
  const mine = (apiVersion: string, kind: string, name: string, spec: Record<string, unknown>) => ({
    apiVersion,
    kind,
    metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'sno-relocate' } },
    spec,
  });
  const idmsWanted = mine(IDMS_REF.apiVersion, IDMS_REF.kind, IDMS_REF.name, idms.spec);
  const tagWanted = mine('config.openshift.io/v1', 'ImageTagMirrorSet', 'sno-relocate-tag-mirrors', {
    imageTagMirrors: [{ source: 'quay.io/store', mirrors: ['mirror.example.com/store'] }],
  });
  const icspWanted = mine('operator.openshift.io/v1alpha1', 'ImageContentSourcePolicy', IDMS_REF.name, {
    repositoryDigestMirrors: digest,
  });
  const moved = [{ source: 'registry.redhat.io/redhat', mirrors: ['mirror2.example.com/redhat'] }];
  it.each([
    ['no mirrors, nothing of the agent', view(), [], [], 'noop', [], undefined],
    [
      'digest mirrors on a new cluster',
      view(),
      digest,
      [],
      'change',
      ['create ImageDigestMirrorSet'],
      { write: [{ action: 'create', object: idmsWanted }], delete: [] },
    ],
    [
      'digest and tag mirrors, the digest ones in place',
      view({ owned: [idms] }),
      digest,
      tag,
      'change',
      ['create ImageTagMirrorSet'],
      { write: [{ action: 'create', object: tagWanted }], delete: [] },
    ],
    [
      'digest mirrors on an old cluster',
      view({ serves: { idms: false, itms: false, icsp: true } }),
      digest,
      [],
      'change',
      ['create ImageContentSourcePolicy'],
      { write: [{ action: 'create', object: icspWanted }], delete: [] },
    ],
    [
      'tag mirrors without ImageTagMirrorSet',
      view({ serves: { idms: false, itms: false, icsp: true } }),
      [],
      tag,
      'conflict',
      [],
      undefined,
    ],
    [
      'neither kind served',
      view({ serves: { idms: false, itms: false, icsp: false } }),
      digest,
      [],
      'conflict',
      [],
      undefined,
    ],
    ['in place', view({ owned: [idms] }), digest, [], 'noop', [], undefined],
    [
      'other mirrors for the same source',
      view({ owned: [idms] }),
      moved,
      [],
      'change',
      ['update ImageDigestMirrorSet'],
      {
        write: [
          {
            action: 'update',
            object: mine(IDMS_REF.apiVersion, IDMS_REF.kind, IDMS_REF.name, { imageDigestMirrors: moved }),
          },
        ],
        delete: [],
      },
    ],
    [
      'mirrors the site no longer has',
      view({ owned: [idms] }),
      [],
      [],
      'change',
      ['delete ImageDigestMirrorSet'],
      { write: [], delete: [{ apiVersion: 'x', kind: 'ImageDigestMirrorSet', name: IDMS_REF.name }] },
    ],
    [
      "an object of the agent's name it did not make",
      view({ foreign: ['ImageDigestMirrorSet sno-relocate-digest-mirrors'] }),
      digest,
      [],
      'conflict',
      [],
      undefined,
    ],
  ] as const)('%s', (_, v, imageDigestMirrors, imageTagMirrors, action, changes, decision) => {
    const plan = mirrorsStep.plan(
      v,
      testSite({ imageDigestMirrors: [...imageDigestMirrors], imageTagMirrors: [...imageTagMirrors] }),
    );
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => `${c.action} ${c.target.split(' ')[0]}`) : []).toEqual(
      changes,
    );
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });

  it('warns in the plan of a catalog pulled by tag from a source with only digest mirrors', () => {
    const plan = mirrorsStep.plan(
      view({ owned: [idms], catalogs: [catalog('by-tag', 'registry.redhat.io/redhat/index:v4.16')] }),
      testSite({ imageDigestMirrors: digest }),
    );
    expect(plan).toMatchObject({ action: 'noop', reason: expect.stringContaining('; warning: CatalogSource') });
  });
});
