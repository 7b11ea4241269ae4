/**
 * Makes test/watch/fixtures/relocated-store.jsonl: a recording of `watch --once` over a relocated
 * store cluster in trouble on the real test API (Cluster API as test/watch/capi-scenario.ts seeds it
 * among the rest), plus one later evaluation (as the running watcher makes when an escalation falls
 * due) six minutes on. Run: npx tsx test/watch/record-fixture.ts
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRootFs } from '../../src/ports/fs.js';
import { writeContextFile } from '../../src/watch/context.js';
import { startFactory, STATE_DIR } from '../cluster/env.js';
import { FACTORY_REGISTRY } from '../kube/factory-cluster.js';
import { REPO } from '../node/context.js';
import { seedCapi } from './capi-scenario.js';
import { condition, GVR, Scenario } from './scenario.js';

export const FIXTURE = path.join(REPO, 'test/watch/fixtures/relocated-store.jsonl');
export const FIXTURE_CONTEXT = {
  siteRegistries: ['registry.store42.example.com:5000'],
  digestMirrorSources: ['quay.io/openshift-release-dev/ocp-release', 'registry.redhat.io/redhat'],
  tagMirrorSources: [],
  factoryRegistries: [FACTORY_REGISTRY],
};

const env = await startFactory({ crds: { except: ['capi', 'hypershift'] }, seed: { csrs: false }, models: false });
try {
  const kc = env.cluster.kubeConfig();
  const s = new Scenario(kc);
  await s.create(
    GVR.catalogSource,
    { name: 'redhat-operators', namespace: 'openshift-marketplace' },
    { sourceType: 'grpc', image: 'registry.redhat.io/redhat/redhat-operator-index:v4.16' },
    { connectionState: { lastObservedState: 'TRANSIENT_FAILURE' } },
  );
  await s.namespace('openshift-storage');
  await s.create(
    GVR.subscription,
    { name: 'odf-operator', namespace: 'openshift-storage' },
    {
      name: 'odf-operator',
      source: 'redhat-operators',
      sourceNamespace: 'openshift-marketplace',
      channel: 'stable-4.16',
    },
    {
      conditions: [
        condition(
          'ResolutionFailed',
          'True',
          'ErrorPreventedResolution',
          'failed to populate resolver cache from source redhat-operators/openshift-marketplace',
        ),
      ],
    },
  );
  await s.create(
    GVR.machineOSConfig,
    { name: 'master', annotations: { 'machineconfiguration.openshift.io/current-machine-os-build': 'master-7d1c' } },
    {
      machineConfigPool: { name: 'master' },
      imageBuilder: { imageBuilderType: 'Job' },
      renderedImagePushSecret: { name: 'push-secret' },
      renderedImagePushSpec: `${FACTORY_REGISTRY}/os/master:latest`,
    },
    { currentImagePullSpec: `${FACTORY_REGISTRY}/os/master@sha256:${'7'.repeat(64)}` },
  );
  await s.create(
    GVR.machineOSBuild,
    { name: 'master-7d1c' },
    {
      machineConfig: { name: 'rendered-master-1' },
      machineOSConfig: { name: 'master' },
      renderedImagePushSpec: `${FACTORY_REGISTRY}/os/master:latest`,
    },
    {
      conditions: [
        condition(
          'Failed',
          'True',
          'BuildFailed',
          'pushing image: dial tcp: lookup registry.factory.example.com: no such host',
        ),
      ],
    },
  );
  await s.create(
    GVR.clusterOperator,
    { name: 'operator-lifecycle-manager-packageserver' },
    {},
    {
      conditions: [
        condition('Available', 'True'),
        condition('Progressing', 'True', 'Rollout', 'Deploying packageserver'),
      ],
    },
  );
  // Cluster API of both groups: owners, stored versions, webhooks, conditions and migrations
  await seedCapi(kc, env.cluster.kubeconfigPath);

  const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-fixture-'));
  await writeContextFile(createRootFs(root), STATE_DIR, FIXTURE_CONTEXT);
  // exits 1: the cluster has error findings
  spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(REPO, 'src/cli/main.ts'),
      'watch',
      '--once',
      '--kubeconfig',
      env.cluster.kubeconfigPath,
      '--root',
      root,
      '--state-dir',
      STATE_DIR,
      '--record-events',
      FIXTURE,
    ],
    { stdio: 'ignore' },
  );
  const last = JSON.parse(readFileSync(FIXTURE, 'utf8').trim().split('\n').at(-1)!) as { at: string };
  appendFileSync(
    FIXTURE,
    `${JSON.stringify({ type: 'evaluate', at: new Date(Date.parse(last.at) + 6 * 60_000).toISOString() })}\n`,
  );
  console.log(`wrote ${FIXTURE}`);
} finally {
  await env.stop();
}
