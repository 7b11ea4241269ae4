import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import { opensslCa } from '../../test/helpers/openssl.js';
import type { Site } from '../config/site.js';
import {
  type AccessDecision,
  type AccessView,
  accessStep,
  FACTORY_ADMIN_REFUSED,
  FACTORY_ADMIN_WORKS,
  REVOKED_ANNOTATION,
} from './access.js';

/** when the views were read: the certificates the tests make are valid then */
const READ_AT = new Date().toISOString();

describe('access step', () => {
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
  // no installer admin CA in these views: the factory's admin.kubeconfig admits nobody
  const writes = (d: Partial<AccessDecision>): AccessDecision => ({ clientCaField: false, factoryWorks: false, ...d });
  it.each<[string, Partial<AccessView>, NonNullable<Site['access']>, string, string[], AccessDecision?]>([
    [
      'a client CA, nothing there',
      { apiserver: apiserver() },
      { clientCaPem: CA },
      'change',
      ['create', 'update'],
      writes({ clientCa: { action: 'create', pem: CA }, clientCaField: true }),
    ],
    [
      'another client CA in the ConfigMap, the field in place',
      { clientCa: cm('old'), apiserver: apiserver('sno-relocate-admin-client-ca') },
      { clientCaPem: CA },
      'change',
      ['update'],
      writes({ clientCa: { action: 'update', pem: CA } }),
    ],
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
      writes({ kubeadminHash: HASH }),
    ],
    ['the kubeadmin hash in place', { kubeadmin: kubeadmin(HASH) }, { kubeadminPasswordHash: HASH }, 'noop', []],
    ['no kubeadmin secret to write into', {}, { kubeadminPasswordHash: HASH }, 'conflict', []],
  ])('%s', (_, view, access, action, changes, decision) => {
    const plan = accessStep.plan({ readAt: READ_AT, ...view }, testSite({ access }));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.action) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});

describe("the factory's admin.kubeconfig at the site", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'access-ca-'));
  const installer = readFileSync(opensslCa(dir, 'admin-kubeconfig-signer').crt, 'utf8');
  const site = readFileSync(opensslCa(dir, 'store42-admin-client-ca').crt, 'utf8');
  const adminCa = (bundle: string, revoked?: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'admin-kubeconfig-client-ca',
      namespace: 'openshift-config',
      ...(revoked && { annotations: { [REVOKED_ANNOTATION]: revoked } }),
    },
    data: { 'ca-bundle.crt': bundle },
  });
  const inPlace = {
    clientCa: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'sno-relocate-admin-client-ca' },
      data: { 'ca-bundle.crt': site },
    },
    apiserver: {
      apiVersion: 'config.openshift.io/v1',
      kind: 'APIServer',
      metadata: { name: 'cluster' },
      spec: { clientCA: { name: 'sno-relocate-admin-client-ca' } },
    },
    readAt: READ_AT,
  };
  const said = (plan: ReturnType<typeof accessStep.plan>) =>
    plan.action === 'change' ? plan.summary : plan.action === 'noop' ? plan.reason : plan.reason;

  it.each([
    ['no access given: it stays', { adminCa: adminCa(installer) }, undefined, 'noop', FACTORY_ADMIN_WORKS],
    [
      'kept beside the site CA',
      { ...inPlace, adminCa: adminCa(installer) },
      { clientCaPem: site },
      'noop',
      FACTORY_ADMIN_WORKS,
    ],
    [
      'revoked: the installer CA leaves the bundle',
      { ...inPlace, adminCa: adminCa(installer) },
      { clientCaPem: site, factoryAdminKubeconfig: 'revoke' },
      'change',
      FACTORY_ADMIN_REFUSED,
    ],
    [
      'already revoked',
      { ...inPlace, adminCa: adminCa('', installer) },
      { clientCaPem: site, factoryAdminKubeconfig: 'revoke' },
      'noop',
      FACTORY_ADMIN_REFUSED,
    ],
    [
      'kept again after a revocation, in so many words: restored',
      { ...inPlace, adminCa: adminCa('', installer) },
      { clientCaPem: site, factoryAdminKubeconfig: 'keep' },
      'change',
      FACTORY_ADMIN_WORKS,
    ],
    [
      'a site-config that says nothing after a revocation: it stays revoked',
      { ...inPlace, adminCa: adminCa('', installer) },
      { clientCaPem: site },
      'noop',
      FACTORY_ADMIN_REFUSED,
    ],
    [
      'no access given after a revocation: it stays revoked',
      { adminCa: adminCa('', installer) },
      undefined,
      'noop',
      FACTORY_ADMIN_REFUSED,
    ],
    [
      "revoked, but the site's client CA is the installer's own",
      { ...inPlace, adminCa: adminCa(installer) },
      { clientCaPem: installer, factoryAdminKubeconfig: 'revoke' },
      'change',
      FACTORY_ADMIN_WORKS,
    ],
  ] as const)('%s', (_, view, access, action, words) => {
    const plan = accessStep.plan({ readAt: READ_AT, ...view } as AccessView, testSite(access ? { access } : {}));
    expect(plan.action).toBe(action);
    expect(said(plan)).toContain(words);
  });

  it.each([
    [
      'revoked: the bundle emptied, kept in the annotation',
      adminCa(installer),
      'revoke',
      { bundle: '', revoked: installer },
      false,
    ],
    ['restored from the annotation', adminCa('', installer), 'keep', { bundle: installer }, true],
  ] as const)('decides the bundle it writes: %s', (_, ca, factoryAdminKubeconfig, written, factoryWorks) => {
    const plan = accessStep.plan(
      { ...inPlace, adminCa: ca } as AccessView,
      testSite({ access: { clientCaPem: site, factoryAdminKubeconfig } }),
    );
    expect(plan.action === 'change' && plan.decision).toEqual({ clientCaField: false, adminCa: written, factoryWorks });
  });
});
