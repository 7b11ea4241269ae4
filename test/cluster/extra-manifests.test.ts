/**
 * The extra-manifests step on a real kube-apiserver, through the real loader and engine: a CRD and
 * its custom resource in separate files, a multi-document file holding a namespace and the objects
 * in it, a Secret whose values never reach a plan, log or error, an object the API refuses (named
 * by file and document index, at plan through the dry run and at apply), and a rerun with nothing
 * to do.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSiteConfig } from '../../src/config/load.js';
import type { ExtraManifest } from '../../src/config/extra-manifests.js';
import { EXAMPLE } from '../helpers/cli.js';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const SECRET_VALUE = 'store42-token-Zq9vX3';
const STEP = ['extra-manifests'];

/** A CRD for kind <Kind> in example.com whose spec.size is at most 10. */
const crd = (kind: string) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${kind.toLowerCase()}s.example.com` },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: `${kind.toLowerCase()}s`, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: { spec: { type: 'object', properties: { size: { type: 'integer', maximum: 10 } } } },
          },
        },
      },
    ],
  },
});

const cr = (kind: string, name: string, size: number, namespace = 'site-ops') => ({
  apiVersion: 'example.com/v1',
  kind,
  metadata: { name, namespace },
  spec: { size },
});

let work: string;

/** Extra manifests as the loader reads them from a site-config folder holding these files. */
async function manifests(files: Record<string, object[]>): Promise<ExtraManifest[]> {
  const dir = mkdtempSync(path.join(work, 'site-'));
  cpSync(EXAMPLE, dir, { recursive: true });
  mkdirSync(path.join(dir, 'extra-manifests'));
  for (const [name, docs] of Object.entries(files))
    writeFileSync(path.join(dir, 'extra-manifests', name), docs.map((d) => yaml.dump(d)).join('---\n'));
  return (await loadSiteConfig(dir, new Date())).site.extraManifests;
}

describe.skipIf(kubeSkipped)('extra-manifests on a real API', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'extra-manifests-'));
    env = await startFactory({ models: false });
    kc = env.cluster.kubeConfig();
  });
  afterAll(async () => {
    await env?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('plans, applies in name order after the CRDs and namespaces they need, and then has nothing to do', async () => {
    const extra = await manifests({
      '30-widget.yaml': [cr('Widget', 'w1', 3)],
      '10-crd.yaml': [crd('Widget')],
      '20-site-ops.yaml': [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'site-ops' } },
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'sriov', namespace: 'site-ops' }, data: { vfs: '8' } },
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'registry-token', namespace: 'site-ops' },
          stringData: { token: SECRET_VALUE },
        },
      ],
    });
    expect(extra.map((m) => `${m.file}[${m.index}]`)).toEqual([
      'extra-manifests/10-crd.yaml[0]',
      'extra-manifests/20-site-ops.yaml[0]',
      'extra-manifests/20-site-ops.yaml[1]',
      'extra-manifests/20-site-ops.yaml[2]',
      'extra-manifests/30-widget.yaml[0]',
    ]);
    const a = await agent(env, storeSite({ extraManifests: extra }));

    const [plan] = await a.plan(STEP);
    expect(plan).toMatchObject({ step: 'extra-manifests', action: 'change' });
    const changes = plan!.action === 'change' ? plan!.changes : [];
    expect(changes.map((c) => [c.action, c.target, c.summary])).toEqual([
      ['create', 'CustomResourceDefinition widgets.example.com', 'extra-manifests/10-crd.yaml[0]'],
      ['create', 'Namespace site-ops', 'extra-manifests/20-site-ops.yaml[0]'],
      [
        'apply',
        'ConfigMap site-ops/sriov',
        'extra-manifests/20-site-ops.yaml[1]: in namespace site-ops, which extra-manifests/20-site-ops.yaml[0] creates',
      ],
      [
        'apply',
        'Secret site-ops/registry-token',
        'extra-manifests/20-site-ops.yaml[2]: in namespace site-ops, which extra-manifests/20-site-ops.yaml[0] creates; a Secret: its data is not shown',
      ],
      [
        'apply',
        'Widget site-ops/w1',
        'extra-manifests/30-widget.yaml[0]: once extra-manifests/10-crd.yaml[0] (widgets.example.com) is established',
      ],
    ]);
    expect(changes[0]!.diff).toContain('+ spec.names.kind: "Widget"');

    const state = await a.run(STEP);
    expect(state.steps['extra-manifests']).toMatchObject({ status: 'done' });
    const custom = kc.makeApiClient(CustomObjectsApi);
    const widget = (await custom.getNamespacedCustomObject({
      group: 'example.com',
      version: 'v1',
      plural: 'widgets',
      namespace: 'site-ops',
      name: 'w1',
    })) as { spec: { size: number }; metadata: { managedFields: { manager: string; operation: string }[] } };
    expect(widget.spec.size).toBe(3);
    expect(widget.metadata.managedFields).toContainEqual(
      expect.objectContaining({ manager: 'sno-relocate', operation: 'Apply' }),
    );
    const core = kc.makeApiClient(CoreV1Api);
    expect((await core.readNamespacedConfigMap({ namespace: 'site-ops', name: 'sriov' })).data).toEqual({ vfs: '8' });
    const secret = await core.readNamespacedSecret({ namespace: 'site-ops', name: 'registry-token' });
    expect(Buffer.from(secret.data!.token!, 'base64').toString()).toBe(SECRET_VALUE);

    // a rerun: every object is as the manifests say, so nothing is applied
    const again = await agent(env, storeSite({ extraManifests: extra }), a.root);
    expect(await again.plan(STEP)).toEqual([
      { step: 'extra-manifests', action: 'noop', reason: 'the cluster already holds the 5 extra manifest(s)' },
    ]);
    await again.run(STEP);
    expect(again.logs.join('\n')).toContain('nothing to do: the cluster already holds the 5 extra manifest(s)');

    // a changed manifest is an update, with its diff
    const changed = extra.map((m) =>
      m.object.kind === 'ConfigMap' ? { ...m, object: { ...m.object, data: { vfs: '16' } } } : m,
    );
    const [update] = await (await agent(env, storeSite({ extraManifests: changed }), a.root)).plan(STEP);
    expect(update).toMatchObject({
      action: 'change',
      changes: [
        { action: 'update', target: 'ConfigMap site-ops/sriov', diff: ['- data.vfs: "8"', '+ data.vfs: "16"'] },
      ],
    });

    const seen = [...a.logs, ...again.logs, JSON.stringify(plan), JSON.stringify(state)].join('\n');
    expect(seen).not.toContain(SECRET_VALUE);
    expect(seen).not.toContain(Buffer.from(SECRET_VALUE).toString('base64'));
  });

  it('refuses at plan, naming file and document index, what the dry run shows the API would refuse', async () => {
    const extra = await manifests({
      '10-crd.yaml': [crd('Widget')],
      '50-big.yaml': [
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ok', namespace: 'default' }, data: { a: 'b' } },
        cr('Widget', 'too-big', 50, 'default'),
      ],
    });
    const a = await agent(env, storeSite({ extraManifests: extra }));
    const [plan] = await a.plan(STEP);
    expect(plan).toMatchObject({ action: 'conflict' });
    expect(plan!.action === 'conflict' && plan!.reason).toMatch(
      /^extra-manifests\/50-big\.yaml\[1\]: failed to dry-run apply Widget default\/too-big: HTTP 422: .*spec\.size/,
    );
    // nothing was written: the valid ConfigMap of the same file is not there either
    await expect(a.run(STEP)).rejects.toThrow('extra-manifests/50-big.yaml[1]');
    const core = kc.makeApiClient(CoreV1Api);
    await expect(core.readNamespacedConfigMap({ namespace: 'default', name: 'ok' })).rejects.toMatchObject({
      code: 404,
    });
  });

  it('fails at apply, naming file and document index, an object of a new kind the API refuses', async () => {
    const extra = await manifests({
      '10-gadget-crd.yaml': [crd('Gadget')],
      '40-gadgets.yaml': [cr('Gadget', 'fine', 2, 'default'), cr('Gadget', 'too-big', 50, 'default')],
    });
    const a = await agent(env, storeSite({ extraManifests: extra }));
    const err = await a.run(STEP).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(
      /^extra-manifests\/40-gadgets\.yaml\[1\]: failed to apply Gadget default\/too-big: HTTP 422: .*spec\.size/,
    );
    // the manifests before it are applied; the next run resumes from there once the file is fixed
    const custom = kc.makeApiClient(CustomObjectsApi);
    await expect(
      custom.getNamespacedCustomObject({
        group: 'example.com',
        version: 'v1',
        plural: 'gadgets',
        namespace: 'default',
        name: 'fine',
      }),
    ).resolves.toMatchObject({ spec: { size: 2 } });
  });

  it('keeps a refused Secret’s values out of the plan', async () => {
    const extra = await manifests({
      '60-pull.yaml': [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'kubernetes.io/dockerconfigjson',
          metadata: { name: 'pull', namespace: 'default' },
          stringData: { '.dockerconfigjson': `{"auths": ${SECRET_VALUE}` },
        },
      ],
    });
    const a = await agent(env, storeSite({ extraManifests: extra }));
    const [plan] = await a.plan(STEP);
    expect(plan!.action === 'conflict' && plan!.reason).toMatch(/^extra-manifests\/60-pull\.yaml\[0\]: .*HTTP 422/);
    expect(JSON.stringify(plan) + a.logs.join('\n')).not.toContain(SECRET_VALUE);
  });
});
