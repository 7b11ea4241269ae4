import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import { type ExtraManifestsView, extraManifestsStep } from './extra-manifests.js';

describe('extra-manifests decisions', () => {
  const cm = (data: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'shop', namespace: 'store' },
    data,
  });
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'token', namespace: 'store' },
    data: { t: 'c2VjcmV0' },
  };
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.store.example.com' },
    spec: {
      group: 'store.example.com',
      names: { kind: 'Widget', plural: 'widgets' },
      versions: [{ name: 'v1', served: true }],
    },
  };
  const established = { ...crd, status: { conditions: [{ type: 'Established', status: 'True' }] } };
  const at = (object: object, i = 0) => ({ file: `extra-manifests/${i}.yaml`, index: 0, object: object as never });
  const APPS = 'apps.store42.example.com';
  const a = at(cm({ a: '2' }));
  const b = at(cm({ b: '1' }), 1);
  const widget = at(
    { apiVersion: 'store.example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'store' } },
    2,
  );
  const crdWait = { name: crd.metadata.name, serves: { apiVersion: 'store.example.com/v1', kind: 'Widget' } };
  it.each([
    ['no manifests', [], 'noop', [], undefined],
    [
      'a new object',
      [{ manifest: a, next: cm({ a: '2' }) }],
      'change',
      ['create'],
      { awaitAppsDomain: APPS, apply: [{ manifest: a }] },
    ],
    ['in place', [{ manifest: a, current: cm({ a: '2' }), next: cm({ a: '2' }) }], 'noop', [], undefined],
    [
      'a field to change, the manifest before it in place: only the changed one is applied',
      [
        { manifest: b, current: cm({ b: '1' }), next: cm({ b: '1' }) },
        { manifest: a, current: cm({ a: '1' }), next: cm({ a: '2' }) },
      ],
      'change',
      ['update'],
      { awaitAppsDomain: APPS, apply: [{ manifest: a }] },
    ],
    [
      'a CRD and an object of its kind, waiting for it',
      [
        { manifest: at(crd), next: crd },
        { manifest: widget, pending: 'once extra-manifests/0.yaml is established' },
      ],
      'change',
      ['create', 'apply'],
      { awaitAppsDomain: APPS, apply: [{ manifest: at(crd), awaitCrd: crdWait }, { manifest: widget }] },
    ],
    [
      'a CRD not established yet',
      [{ manifest: at(crd), current: crd, next: crd }],
      'change',
      ['apply'],
      { awaitAppsDomain: APPS, apply: [{ manifest: at(crd), awaitCrd: crdWait }] },
    ],
    ['a CRD established', [{ manifest: at(crd), current: established, next: established }], 'noop', [], undefined],
    [
      'refused by the API',
      [{ manifest: at(cm({})), conflict: 'extra-manifests/0.yaml: forbidden' }],
      'conflict',
      [],
      undefined,
    ],
  ] as const)('%s', (_, manifests, action, changes, decision) => {
    const view = { manifests, appsDomain: APPS } as unknown as ExtraManifestsView;
    const plan = extraManifestsStep.plan(view, testSite());
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.action) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });

  it("never shows a Secret's data", () => {
    const view = { manifests: [{ manifest: at(secret), next: secret }] } as ExtraManifestsView;
    const plan = extraManifestsStep.plan(view, testSite());
    expect(plan).toMatchObject({ action: 'change', changes: [{ action: 'create' }] });
    // the decision holds the manifest to apply; what the plan shows is the rest
    const { decision: _applied, ...shown } = plan as typeof plan & { decision?: unknown };
    expect(JSON.stringify(shown)).not.toContain('c2VjcmV0');
  });
});
