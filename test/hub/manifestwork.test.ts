/**
 * The hub objects `render --hub-objects` writes, against Open Cluster Management's own schema: the
 * ManifestWork and ManifestWorkReplicaSet CRDs in test/hub/crds (written from
 * open-cluster-management-io/api, see their headers) on a real kube-apiserver accept the generated
 * objects as they are (nothing pruned) and refuse broken ones, so the schema is known to bite; and
 * every statusFeedback JSONPath names a scalar field the agent really writes under `.status`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunState } from '../../src/engine/state.js';
import { FEEDBACK_FIELDS, feedbackPath, WORK_GROUP } from '../../src/hub/manifestwork.js';
import { REPORT_CRD, reportStatus } from '../../src/hub/report.js';
import { createLogger } from '../../src/log/logger.js';
import { systemClock } from '../../src/ports/clock.js';
import { createRootFs } from '../../src/ports/fs.js';
import { REPO, runCli } from '../helpers/cli.js';
import { apiAccepts } from '../kube/accepts.js';
import { missingBinaries, startCluster, type TestCluster } from '../kube/cluster.js';
import { applyCrds } from '../kube/install.js';

const HUB_CRDS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'crds');
const FLEET = path.join(REPO, 'examples/fleet');
const skip = missingBinaries().length > 0 || process.env.SNO_RELOCATE_SKIP_KUBE === '1';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec: Record<string, unknown>;
};
type JsonPath = { name?: string; path: string };

/** A simple `.status.a.b` JSONPath against an object; undefined when a segment is missing. */
const resolve = (obj: unknown, jsonPath: string): unknown =>
  jsonPath
    .split('.')
    .slice(1)
    .reduce<unknown>((v, key) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined), obj);

let work: string;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'hub-objects-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('statusFeedback JSONPaths', () => {
  it('each name a scalar of the SiteRelocation status schema and a value the agent writes', async () => {
    const failedRun: RunState = {
      version: 2,
      site: 'store-0042',
      configHash: 'h',
      result: 'failed',
      startedAt: '2026-11-24T10:00:00.000Z',
      finishedAt: '2026-11-24T10:05:00.000Z',
      message: 'domain: the API did not answer',
      steps: {
        'ssh-keys': { status: 'done', inputHash: 'a', attempts: 1, startedAt: '2026-11-24T10:00:01.000Z' },
        domain: { status: 'failed', inputHash: 'b', attempts: 2, startedAt: '2026-11-24T10:04:00.000Z' },
      },
    };
    const root = mkdtempSync(path.join(work, 'root-'));
    const status = await reportStatus(
      {
        fs: createRootFs(root),
        clock: systemClock,
        log: createLogger({ write: () => undefined, journal: false }),
        stateDir: '/var/lib/sno-relocate',
      },
      failedRun,
    );
    const schema = REPORT_CRD.spec.versions[0]!.schema.openAPIV3Schema;
    for (const field of FEEDBACK_FIELDS) {
      const at = feedbackPath(field);
      expect(['string', 'integer'], at).toContain(
        (resolve(schema.properties, at.replace('.status.', '.status.properties.')) as { type: string }).type,
      );
      expect(['string', 'number'], at).toContain(typeof resolve({ status }, at));
    }
  });
});

describe.skipIf(skip)('hub objects against the Open Cluster Management CRDs', () => {
  let cluster: TestCluster;
  let custom: CustomObjectsApi;
  let objects: Obj[];

  beforeAll(async () => {
    cluster = await startCluster();
    await applyCrds(cluster.kubeconfigPath, { dir: HUB_CRDS });
    const kc = cluster.kubeConfig();
    custom = kc.makeApiClient(CustomObjectsApi);
    const hubDir = path.join(work, 'hub');
    const rendered = runCli(
      [
        'render',
        '--inventory',
        path.join(FLEET, 'inventory.csv'),
        '--template',
        path.join(FLEET, 'template'),
        '--out',
        path.join(work, 'sites'),
        '--hub-objects',
        hubDir,
        '--placement',
        'sno-fleet/store-sites',
      ],
      { timeoutMs: 60_000 },
    );
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(rendered.stdout).toContain(`hub objects: 4 file(s) in ${hubDir}`);
    objects = ['store-0042', 'store-0043', 'store-0044']
      .map((s) => `${s}.manifestwork.yaml`)
      .concat('manifestworkreplicaset.yaml')
      .map((f) => yaml.load(readFileSync(path.join(hubDir, f), 'utf8')) as Obj);
    const core = kc.makeApiClient(CoreV1Api);
    for (const namespace of new Set(objects.map((o) => o.metadata.namespace)))
      await core.createNamespace({ body: { metadata: { name: namespace } } });
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  const plural = (o: Obj) => (o.kind === 'ManifestWork' ? 'manifestworks' : 'manifestworkreplicasets');
  const create = (o: Obj) =>
    custom.createNamespacedCustomObject({
      group: WORK_GROUP,
      version: o.apiVersion.split('/')[1]!,
      plural: plural(o),
      namespace: o.metadata.namespace,
      body: o,
    }) as Promise<Obj>;
  /** the generated object with one change, under a name of its own */
  const broken = (o: Obj, name: string, change: (spec: Record<string, unknown>) => void): Obj => {
    const copy = structuredClone(o);
    copy.metadata.name = name;
    change(copy.spec);
    return copy;
  };
  const config = (spec: Record<string, unknown>) =>
    ((spec.manifestWorkTemplate ?? spec) as { manifestConfigs: Record<string, unknown>[] }).manifestConfigs[0]!;

  it('accepts every generated object as it is: the schema prunes nothing', async () => {
    expect(objects.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      'ManifestWork store-0042/sno-relocate-report',
      'ManifestWork store-0043/sno-relocate-report',
      'ManifestWork store-0044/sno-relocate-report',
      'ManifestWorkReplicaSet sno-fleet/sno-relocate-report',
    ]);
    for (const o of objects) {
      const stored = await create(o);
      if (o.kind === 'ManifestWork') expect(stored.spec).toEqual(o.spec);
      else
        // the only additions are upstream's defaults for the placement's rollout
        expect(stored.spec).toEqual({
          ...o.spec,
          placementRefs: [
            {
              name: 'store-sites',
              rolloutStrategy: { type: 'All', all: { progressDeadline: 'None', maxFailures: 0, minSuccessTime: '0' } },
            },
          ],
        });
      expect(config(stored.spec)).toMatchObject({
        resourceIdentifier: { group: 'sno-relocate.openshift.io', resource: 'siterelocations', name: 'sno-relocate' },
        updateStrategy: { type: 'ReadOnly' },
      });
    }
  });

  it.each([
    [
      'a jsonPath without a name',
      (s: Record<string, unknown>) =>
        ((config(s).feedbackRules as { jsonPaths: JsonPath[] }[])[0]!.jsonPaths[0] = { path: '.status.phase' }),
    ],
    [
      'an update strategy upstream does not have',
      (s: Record<string, unknown>) => (config(s).updateStrategy = { type: 'Readonly' }),
    ],
    ['a feedback rule of no type', (s: Record<string, unknown>) => (config(s).feedbackRules = [{ jsonPaths: [] }])],
    [
      'a resource identifier without a resource',
      (s: Record<string, unknown>) => (config(s).resourceIdentifier = { name: 'x' }),
    ],
    [
      'a manifest that is not a Kubernetes object',
      (s: Record<string, unknown>) =>
        (((s.manifestWorkTemplate ?? s) as { workload: { manifests: unknown[] } }).workload.manifests = [
          { metadata: {} },
        ]),
    ],
  ])('refuses %s, in either kind', async (_what, change) => {
    for (const [i, o] of [objects[0]!, objects[3]!].entries())
      expect(await apiAccepts(create(broken(o, `broken-${i}-${Math.random().toString(36).slice(2, 8)}`, change)))).toBe(
        false,
      );
  });

  it('refuses a ManifestWorkReplicaSet without a placement', async () => {
    expect(await apiAccepts(create(broken(objects[3]!, 'no-placement', (s) => (s.placementRefs = []))))).toBe(false);
  });
});
