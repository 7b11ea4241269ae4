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
  it.each([
    ['no manifests', [], 'noop', []],
    ['a new object', [{ manifest: at(cm({ a: '1' })), next: cm({ a: '1' }) }], 'change', ['create']],
    ['in place', [{ manifest: at(cm({ a: '1' })), current: cm({ a: '1' }), next: cm({ a: '1' }) }], 'noop', []],
    [
      'a field to change',
      [{ manifest: at(cm({ a: '2' })), current: cm({ a: '1' }), next: cm({ a: '2' }) }],
      'change',
      ['update'],
    ],
    [
      'waits for a CRD another manifest brings',
      [{ manifest: at(cm({})), pending: 'once extra-manifests/0.yaml is established' }],
      'change',
      ['apply'],
    ],
    ['a CRD not established yet', [{ manifest: at(crd), current: crd, next: crd }], 'change', ['apply']],
    ['a CRD established', [{ manifest: at(crd), current: established, next: established }], 'noop', []],
    ['refused by the API', [{ manifest: at(cm({})), conflict: 'extra-manifests/0.yaml: forbidden' }], 'conflict', []],
  ] as const)('%s', (_, view, action, changes) => {
    const plan = extraManifestsStep.plan(view as unknown as ExtraManifestsView, testSite());
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.action) : []).toEqual(changes);
  });

  it("never shows a Secret's data", () => {
    const plan = extraManifestsStep.plan([{ manifest: at(secret), next: secret }] as ExtraManifestsView, testSite());
    expect(plan).toMatchObject({ action: 'change', changes: [{ action: 'create' }] });
    expect(JSON.stringify(plan)).not.toContain('c2VjcmV0');
  });
});
