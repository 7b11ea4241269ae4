import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { type AccessView, accessStep } from './access.js';
import { planOf } from '../engine/engine.js';

describe('access step', () => {
  it("keeps the factory's access when the site-config gives none, without asking the API", async () => {
    const { ctx } = testNode({ site: testSite(), factory: false });
    await expect(planOf(accessStep, ctx)).resolves.toEqual({
      action: 'noop',
      reason: "the site-config gives no admin client CA and no kubeadmin hash: the factory's access stays",
    });
  });

  it('reruns when the hash changes: its inputs hold the access settings', () => {
    const a = accessStep.inputs(testSite({ access: { kubeadminPasswordHash: 'one' } }));
    const b = accessStep.inputs(testSite({ access: { kubeadminPasswordHash: 'two' } }));
    expect(a).not.toEqual(b);
  });
});

describe('access decisions', () => {
  const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const HASH = '$2a$10$abcdefghijklmnopqrstuv';
  const cm = (pem: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'sno-relocate-admin-client-ca' },
    data: { 'ca-bundle.crt': pem },
  });
  const apiserver = (clientCA?: string) => ({
    apiVersion: 'config.openshift.io/v1',
    kind: 'APIServer',
    metadata: { name: 'cluster' },
    spec: clientCA ? { clientCA: { name: clientCA } } : {},
  });
  const kubeadmin = (hash: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'kubeadmin', namespace: 'kube-system' },
    data: { kubeadmin: Buffer.from(hash).toString('base64') },
  });
  it.each([
    ['a client CA, nothing there', { apiserver: apiserver() }, { clientCaPem: CA }, 'change', ['create', 'update']],
    [
      'a client CA in place',
      { clientCa: cm(CA), apiserver: apiserver('sno-relocate-admin-client-ca') },
      { clientCaPem: CA },
      'noop',
      [],
    ],
    ['a clientCA of someone else', { apiserver: apiserver('corporate-ca') }, { clientCaPem: CA }, 'conflict', []],
    ['no APIServer config', {}, { clientCaPem: CA }, 'conflict', []],
    [
      'a kubeadmin hash to write',
      { kubeadmin: kubeadmin('old') },
      { kubeadminPasswordHash: HASH },
      'change',
      ['update'],
    ],
    ['the kubeadmin hash in place', { kubeadmin: kubeadmin(HASH) }, { kubeadminPasswordHash: HASH }, 'noop', []],
    ['no kubeadmin secret to write into', {}, { kubeadminPasswordHash: HASH }, 'conflict', []],
  ] as const)('%s', (_, view, access, action, changes) => {
    const plan = accessStep.plan(view as AccessView, testSite({ access }));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.action) : []).toEqual(changes);
  });
});
