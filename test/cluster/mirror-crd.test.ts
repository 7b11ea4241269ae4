/**
 * The site-config's mirror rules against the CRDs that receive them: every value of the table goes
 * through the agent's validation and, as an ImageDigestMirrorSet and an ImageTagMirrorSet, through a
 * real kube-apiserver with the mirror-set CRDs installed; the two must agree, so that nothing
 * `validate` accepts is refused by the cluster half way through a run (the node already changed).
 * The installed CRDs' patterns are checked to be upstream's (../shared/crds/upstream, beside the
 * clone) where that folder is present.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasErrors } from '../../src/base/findings.js';
import { parseSiteConfig } from '../../src/config/v1/parse.js';
import { REPO } from '../helpers/cli.js';
import { baseDocument } from '../invalid/corpus.js';
import { apiAccepts } from '../kube/accepts.js';
import { missingBinaries, startCluster, type TestCluster } from '../kube/cluster.js';
import { applyCrds, CRD_DIR } from '../kube/install.js';

// beside the clone (CI), or beside the folder of clones
const UPSTREAM =
  ['../shared/crds/upstream', '../../shared/crds/upstream'].map((p) => path.join(REPO, p)).find(existsSync) ?? '';
const SETS = [
  { plural: 'imagedigestmirrorsets', kind: 'ImageDigestMirrorSet', field: 'imageDigestMirrors' },
  { plural: 'imagetagmirrorsets', kind: 'ImageTagMirrorSet', field: 'imageTagMirrors' },
] as const;

/** [what, source, mirrors] */
const TABLE: [string, string, string[]][] = [
  [
    'a repository and a mirror with a port',
    'quay.io/openshift-release-dev/ocp-release',
    ['mirror.example.com:5000/ocp/release'],
  ],
  ['a bare registry', 'quay.io', ['mirror.example.com']],
  ['a wildcard source', '*.example.com', ['mirror.example.com/all']],
  ['separators in a path', 'registry.example.com/a_b/c__d/e-f/g.h', ['mirror.example.com/x--y']],
  ['a single-label host', 'localhost/ocp', ['mirror:5000/ocp']],
  ['a mirror with a URL scheme', 'quay.io/ocp', ['https://mirror.example.com:5000/ocp/art']],
  ['a source with a URL scheme', 'https://quay.io/ocp', ['mirror.example.com/ocp']],
  ['a source with a tag', 'quay.io/ocp:4.16', ['mirror.example.com/ocp']],
  ['a mirror with a digest', 'quay.io/ocp', ['mirror.example.com/ocp@sha256:0123']],
  ['capitals in a path', 'quay.io/OCP', ['mirror.example.com/ocp']],
  ['a wildcard mirror', 'quay.io/ocp', ['*.example.com']],
  ['a wildcard source with a port', '*.example.com:5000', ['mirror.example.com']],
  ['a trailing slash', 'quay.io/ocp/', ['mirror.example.com/ocp']],
  ['an empty label', 'registry..example.com/ocp', ['mirror.example.com/ocp']],
  ['a space', 'quay.io/ocp', ['mirror.example.com/ocp ']],
  ['a host starting with a dash', '-quay.io/ocp', ['mirror.example.com/ocp']],
  ['the same mirror twice', 'quay.io/ocp', ['mirror.example.com/ocp', 'mirror.example.com/ocp']],
];

const skipped = missingBinaries().length > 0 || process.env.SNO_RELOCATE_SKIP_KUBE === '1';

describe.skipIf(skipped)('mirror rules agree with the mirror-set CRDs', () => {
  let cluster: TestCluster;
  let custom: CustomObjectsApi;
  let n = 0;

  beforeAll(async () => {
    cluster = await startCluster();
    await applyCrds(cluster.kubeconfigPath, { only: ['mirrorSets'] });
    custom = cluster.kubeConfig().makeApiClient(CustomObjectsApi);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it.runIf(UPSTREAM !== '')('installs CRDs whose patterns are upstream’s', () => {
    const patterns = (file: string) =>
      [...readFileSync(file, 'utf8').matchAll(/pattern: '?([^'\n]+)'?/g)].map((m) => m[1]);
    for (const set of SETS) {
      const name = `config.openshift.io_${set.plural}.yaml`;
      expect(patterns(path.join(CRD_DIR, name)).sort()).toEqual(patterns(path.join(UPSTREAM, name)).sort());
    }
  });

  it.each(TABLE)('%s: the agent and the API server agree', async (_what, source, mirrors) => {
    for (const set of SETS) {
      const doc = baseDocument() as { spec: Record<string, unknown> };
      doc.spec.imageDigestMirrors = [];
      doc.spec[set.field] = [{ source, mirrors }];
      const agentAccepts = !hasErrors(parseSiteConfig(doc).findings);
      const body = {
        apiVersion: 'config.openshift.io/v1',
        kind: set.kind,
        metadata: { name: `table-${++n}` },
        spec: { [set.field]: [{ source, mirrors }] },
      };
      const clusterAccepts = await apiAccepts(
        custom.createClusterCustomObject({ group: 'config.openshift.io', version: 'v1', plural: set.plural, body }),
      );
      expect({ kind: set.kind, agentAccepts }).toEqual({ kind: set.kind, agentAccepts: clusterAccepts });
    }
  });
});
