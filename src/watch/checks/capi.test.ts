import { describe, expect, it } from 'vitest';
import type { WatchedObject } from '../model.js';
import { capiStatus } from '../capi-resources.js';
import { RESOURCE_BY_KEY } from '../resources.js';
import { ObjectStore } from '../store.js';
import { evaluate, findingKey } from '../track.js';
import { checkCapi } from './capi.js';
import { checkCapiCrd, ownersOf } from './capi-crds.js';
import { checkHostedCluster, checkMigrationStatus } from './capi-hypershift.js';
import { checkCluster, checkMachine, checkReplicas } from './capi-machines.js';

const brief = (findings: { severity: string; reason: string; escalate?: unknown }[]) =>
  findings.map((f) => [f.severity, f.reason, f.escalate ? 'escalates' : '']);
const obj = (
  name: string,
  spec: Record<string, unknown> = {},
  status: Record<string, unknown> = {},
  annotations?: Record<string, string>,
): WatchedObject => ({
  metadata: { name, namespace: 'openshift-cluster-api', ...(annotations && { annotations }) },
  spec,
  status,
});

describe('Cluster and Machine', () => {
  it.each([
    [
      'provisioned and ready (v1beta1)',
      checkCluster(obj('sno', {}, { phase: 'Provisioned', conditions: [{ type: 'Ready', status: 'True' }] })),
      [],
    ],
    [
      'not Available (v1beta2 conditions), its v1beta1 Ready ignored',
      checkCluster(
        obj(
          'sno',
          {},
          {
            phase: 'Provisioned',
            conditions: [{ type: 'Ready', status: 'True' }],
            v1beta2: {
              conditions: [
                { type: 'Available', status: 'False', reason: 'NotAvailable', message: '* InfrastructureReady: no' },
              ],
            },
          },
        ),
      ),
      [['warning', 'Available False: NotAvailable: * InfrastructureReady: no', 'escalates']],
    ],
    [
      'not Ready (v1beta1 fields only)',
      checkCluster(
        obj('sno', {}, { phase: 'Provisioned', conditions: [{ type: 'Ready', status: 'False', reason: 'Waiting' }] }),
      ),
      [['warning', 'Ready False: Waiting', 'escalates']],
    ],
    [
      'failed with a reason',
      checkCluster(obj('sno', {}, { phase: 'Failed', failureReason: 'InvalidConfiguration', failureMessage: 'bad' })),
      [['error', 'failed: InvalidConfiguration: bad (deprecated v1beta1 failureReason/failureMessage)', '']],
    ],
    [
      'failed, with v1beta2 conditions: one finding with both',
      checkCluster(
        obj(
          'sno',
          {},
          {
            failureReason: 'InvalidConfiguration',
            v1beta2: { conditions: [{ type: 'Available', status: 'False', reason: 'NotAvailable' }] },
          },
        ),
      ),
      [
        [
          'error',
          'failed: InvalidConfiguration (deprecated v1beta1 failureReason/failureMessage); Available False: NotAvailable',
          '',
        ],
      ],
    ],
    [
      'machine whose node is unhealthy (v1beta2), though its phase says Running',
      checkMachine(
        obj(
          'm0',
          {},
          {
            phase: 'Running',
            v1beta2: {
              conditions: [
                { type: 'Ready', status: 'False', reason: 'NotReady', message: '* NodeHealthy: not ready' },
                { type: 'NodeHealthy', status: 'False', reason: 'NodeNotReady', message: 'Node sno-0 is not ready' },
                { type: 'Available', status: 'False', reason: 'NotReady' },
              ],
            },
          },
        ),
      ),
      [['warning', 'NodeHealthy False: NodeNotReady: Node sno-0 is not ready', 'escalates']],
    ],
    [
      'machine waiting for its node (v1beta2): Ready names it',
      checkMachine(
        obj(
          'm0',
          {},
          {
            phase: 'Provisioning',
            v1beta2: {
              conditions: [
                { type: 'NodeHealthy', status: 'Unknown', reason: 'WaitingForNode' },
                { type: 'Ready', status: 'False', reason: 'NotReady', message: '* InfrastructureReady: pending' },
              ],
            },
          },
        ),
      ),
      [['info', 'Ready False: NotReady: * InfrastructureReady: pending', 'escalates']],
    ],
    [
      'machine healthy (v1beta2)',
      checkMachine(
        obj(
          'm0',
          {},
          {
            phase: 'Running',
            v1beta2: {
              conditions: ['Ready', 'NodeHealthy', 'Available'].map((type) => ({ type, status: 'True' })),
            },
          },
        ),
      ),
      [],
    ],
    [
      'paused',
      checkCluster(obj('sno', { paused: true }, { phase: 'Failed' })),
      [['info', 'paused: not reconciled', '']],
    ],
    ['machine running', checkMachine(obj('m0', {}, { phase: 'Running' })), []],
    [
      'machine provisioning',
      checkMachine(obj('m0', {}, { phase: 'Provisioning' })),
      [['info', 'phase Provisioning', 'escalates']],
    ],
    ['machine failed', checkMachine(obj('m0', {}, { phase: 'Failed' })), [['error', 'phase Failed', '']]],
    [
      'machine failed with the deprecated fields',
      checkMachine(obj('m0', {}, { phase: 'Failed', failureReason: 'CreateError', failureMessage: 'no capacity' })),
      [['error', 'failed: CreateError: no capacity (deprecated v1beta1 failureReason/failureMessage)', '']],
    ],
    [
      'machine in an odd phase',
      checkMachine(obj('m0', {}, { phase: 'Unknown' })),
      [['warning', 'phase Unknown', 'escalates']],
    ],
    ['machine deleting', checkMachine(obj('m0', {}, { phase: 'Deleting' })), [['info', 'phase Deleting', '']]],
    [
      'machine set short of replicas',
      checkReplicas('MachineSet', obj('ms', { replicas: 2 }, { readyReplicas: 1 })),
      [['warning', '1 of 2 replicas ready', 'escalates']],
    ],
    [
      'machine deployment complete',
      checkReplicas('MachineDeployment', obj('md', { replicas: 1 }, { readyReplicas: 1 })),
      [],
    ],
  ])('%s', (_name, findings, expected) => {
    expect(brief(findings)).toEqual(expected);
  });
});

const crd = (
  name: string,
  marks: {
    managers?: string[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    service?: { namespace: string; name: string };
    group?: string;
  },
): WatchedObject => ({
  metadata: {
    name,
    ...(marks.managers && { managers: marks.managers }),
    ...(marks.labels && { labels: marks.labels }),
    ...(marks.annotations && { annotations: marks.annotations }),
  },
  spec: {
    group: marks.group ?? 'cluster.x-k8s.io',
    versions: [],
    ...(marks.service && {
      conversion: { strategy: 'Webhook', webhook: { clientConfig: { service: marks.service } } },
    }),
  },
});

const store = (objects: Record<string, WatchedObject[]> = {}): ObjectStore => {
  const s = new ObjectStore();
  for (const [resource, list] of Object.entries(objects)) s.apply({ type: 'replace', resource, objects: list });
  return s;
};

describe('owners of the Cluster API CRDs', () => {
  const platform = {
    managers: ['cluster-capi-operator'],
    annotations: { 'include.release.openshift.io/single-node-developer': 'true' },
  };
  const PRIVATE = 'cluster.hypershift.openshift.io';
  const shim = { namespace: 'hypershift-operator', name: 'capi-conversion-webhook-shim' };
  const shimUp = store({
    endpoints: [{ metadata: { ...shim }, status: { ready: 1, notReady: 0 } }],
  });
  it.each([
    ['platform only', crd('machines.cluster.x-k8s.io', platform), undefined, []],
    [
      'platform and HyperShift',
      crd('machines.cluster.x-k8s.io', {
        ...platform,
        managers: ['cluster-capi-operator', 'hypershift'],
      }),
      undefined,
      [
        [
          'error',
          'has two owners: OpenShift (cluster-capi-operator) (field manager cluster-capi-operator, release manifest annotations) and HyperShift (field manager hypershift)',
          '',
        ],
      ],
    ],
    [
      'clusterctl and HyperShift',
      crd('clusters.cluster.x-k8s.io', {
        labels: { 'cluster.x-k8s.io/provider': 'cluster-api' },
        managers: ['hypershift'],
      }),
      undefined,
      [
        [
          'error',
          'has two owners: HyperShift (field manager hypershift) and clusterctl (label cluster.x-k8s.io/provider=cluster-api)',
          '',
        ],
      ],
    ],
    [
      'HyperShift alone in the public group, not listed as unmanaged',
      crd('clusters.cluster.x-k8s.io', { managers: ['hypershift'] }),
      [],
      [
        [
          'warning',
          'owned by HyperShift (field manager hypershift) but not listed as unmanaged in ClusterAPI cluster',
          '',
        ],
      ],
    ],
    [
      'HyperShift alone, listed',
      crd('clusters.cluster.x-k8s.io', { managers: ['hypershift'] }),
      ['clusters.cluster.x-k8s.io'],
      [['warning', 'owned by HyperShift (field manager hypershift)', '']],
    ],
    [
      "HyperShift's private copy: isolated by group, fine",
      crd(`clusters.${PRIVATE}`, { group: PRIVATE, managers: ['hypershift'], service: shim }),
      [],
      [],
    ],
    [
      'a private copy the platform manages too',
      crd(`machines.${PRIVATE}`, { group: PRIVATE, managers: ['cluster-capi-operator', 'hypershift'] }),
      undefined,
      [
        [
          'error',
          `has two owners: HyperShift (group ${PRIVATE}, field manager hypershift) and OpenShift (cluster-capi-operator) (field manager cluster-capi-operator)`,
          '',
        ],
      ],
    ],
    ['no marks at all', crd('clusters.cluster.x-k8s.io', { managers: ['kubectl-create'] }), undefined, []],
  ])('%s', (_name, c, unmanaged, expected) => {
    expect(brief(checkCapiCrd(c, unmanaged, shimUp))).toEqual(expected);
  });

  it('reads ownership from managers, webhook service, labels and the private group', () => {
    expect([
      ...ownersOf(crd('x', { service: { namespace: 'capi-system', name: 'capi-webhook-service' } })).keys(),
    ]).toEqual(['clusterctl']);
    expect(ownersOf(crd('x', { group: `infrastructure.${PRIVATE}`, service: shim }))).toEqual(
      new Map([
        [
          'HyperShift',
          [`group infrastructure.${PRIVATE}`, 'conversion webhook hypershift-operator/capi-conversion-webhook-shim'],
        ],
      ]),
    );
  });

  it('looks only at Cluster API CRDs of both groups, and knows whether the ClusterAPI operator config exists', () => {
    const s = store({
      crds: [
        crd('clusters.cluster.x-k8s.io', { managers: ['hypershift'] }),
        crd(`clusters.${PRIVATE}`, { group: PRIVATE, managers: ['hypershift', 'clusterctl'] }),
        {
          metadata: { name: 'routes.route.openshift.io', managers: ['hypershift'] },
          spec: { group: 'route.openshift.io' },
        },
      ],
    });
    expect(brief(checkCapi(s))).toEqual([
      ['warning', 'owned by HyperShift (field manager hypershift)', ''],
      [
        'error',
        `has two owners: HyperShift (group ${PRIVATE}, field manager hypershift) and clusterctl (field manager clusterctl)`,
        '',
      ],
    ]);
    s.apply({ type: 'installed', resource: 'clusterapis', version: 'v1alpha1' });
    expect(brief(checkCapi(s))[0]).toEqual([
      'warning',
      'owned by HyperShift (field manager hypershift) but not listed as unmanaged in ClusterAPI cluster',
      '',
    ]);
  });
});

describe('stored versions and conversion webhooks', () => {
  const versions = (served: Record<string, boolean>, storage: string) =>
    Object.entries(served).map(([name, s]) => ({ name, served: s, storage: name === storage }));
  const withVersions = (c: WatchedObject, v: object[], stored: string[], annotations?: Record<string, string>) => ({
    ...c,
    metadata: { ...c.metadata, generation: 3, ...(annotations && { annotations }) },
    spec: { ...c.spec, versions: v },
    status: { storedVersions: stored },
  });
  const base = crd('machines.cluster.x-k8s.io', {});
  it.each([
    ['stored and served', withVersions(base, versions({ v1beta1: true, v1beta2: true }, 'v1beta2'), ['v1beta2']), []],
    [
      'a stored version no longer served',
      withVersions(base, versions({ v1beta1: false, v1beta2: true }, 'v1beta2'), ['v1beta1', 'v1beta2']),
      [
        [
          'error',
          'stored versions v1beta1 no longer served (status.storedVersions v1beta1, v1beta2; served v1beta2)',
          '',
        ],
      ],
    ],
    [
      'two stored versions, both served: the migration has not finished',
      withVersions(base, versions({ v1beta1: true, v1beta2: true }, 'v1beta2'), ['v1beta1', 'v1beta2'], {
        'crd-migration.cluster.x-k8s.io/observed-generation': '2',
      }),
      [
        [
          'info',
          'storage migration to v1beta2 not finished: objects stored as v1beta1, v1beta2 (migrated at generation 2, now 3)',
          '',
        ],
      ],
    ],
  ])('%s', (_name, c, expected) => {
    expect(brief(checkCapiCrd(c, undefined, store()))).toEqual(expected);
  });

  it('says how to fix a stored version no longer served: migrate, then trim storedVersions', () => {
    const c = withVersions(base, versions({ v1beta1: false, v1beta2: true }, 'v1beta2'), ['v1beta1', 'v1beta2']);
    expect(checkCapiCrd(c, undefined, store())[0]!.hint).toBe(
      'run the storage migration (rewrite every machines.cluster.x-k8s.io object so it is stored as v1beta2, e.g. an empty patch of each; ' +
        "HyperShift's CRD migrator or Cluster API's does it), then trim status.storedVersions to [v1beta2]: " +
        'kubectl patch crd machines.cluster.x-k8s.io --subresource=status --type=merge -p \'{"status":{"storedVersions":["v1beta2"]}}\'',
    );
  });

  const service = { namespace: 'hypershift', name: 'operator' };
  const hooked = withVersions(
    crd('machines.cluster.x-k8s.io', { service }),
    versions({ v1beta1: true, v1beta2: true }, 'v1beta2'),
    ['v1beta2'],
  );
  const endpoints = (ready: number, notReady: number) => ({
    endpoints: [{ metadata: { ...service }, status: { ready, notReady } }],
  });
  const owner = ['warning', 'owned by HyperShift (conversion webhook hypershift/operator)', ''];
  it.each([
    ['ready endpoints', store(endpoints(1, 0)), [owner]],
    [
      'only endpoints not ready',
      store(endpoints(0, 2)),
      [owner, ['error', 'conversion webhook Service hypershift/operator has no ready endpoints (2 not ready)', '']],
    ],
    [
      'no Endpoints at all',
      store(),
      [
        owner,
        ['error', 'conversion webhook Service hypershift/operator has no ready endpoints (no Endpoints object)', ''],
      ],
    ],
  ])('conversion webhook with %s', (_name, s, expected) => {
    expect(brief(checkCapiCrd(hooked, undefined, s))).toEqual(expected);
  });
});

describe('HostedCluster private Cluster API migration', () => {
  const HS = 'hypershift.openshift.io/';
  const hc = (annotations: Record<string, string>): WatchedObject => ({
    metadata: { name: 'guest', namespace: 'clusters', annotations },
  });
  const cluster = (namespace: string, spec: Record<string, unknown> = {}): WatchedObject => ({
    metadata: { name: 'guest', namespace },
    spec,
  });
  it.each([
    ['migrated', hc({ [`${HS}private-capi-types`]: 'true' }), store(), []],
    [
      'awaiting',
      hc({ [`${HS}scope`]: 'legacy' }),
      store(),
      [['info', 'awaiting private Cluster API migration (scope legacy)', '']],
    ],
    [
      'in progress: the Cluster paused and copied',
      hc({ [`${HS}migration-in-progress`]: 'true', [`${HS}scope`]: 'legacy' }),
      store({
        clusters: [cluster('clusters-guest', { paused: true })],
        privateclusters: [cluster('clusters-guest')],
      }),
      [
        [
          'info',
          'private Cluster API migration in progress: Cluster clusters-guest/guest paused, 1 Cluster copied to cluster.hypershift.openshift.io',
          'escalates',
        ],
      ],
    ],
    [
      'failed and rolled back',
      hc({ [`${HS}migration-failed`]: 'health-check-timeout', [`${HS}scope`]: 'legacy' }),
      store({ privateclusters: [cluster('clusters-other')] }),
      [
        [
          'error',
          'private Cluster API migration failed: health-check-timeout; rolled back to the legacy operator (scope legacy)',
          '',
        ],
      ],
    ],
    [
      'failed, rollback incomplete',
      hc({ [`${HS}migration-failed`]: 'resource-conversion-failed' }),
      store({
        clusters: [cluster('clusters-guest', { paused: true })],
        privateclusters: [cluster('clusters-guest')],
      }),
      [
        [
          'error',
          'private Cluster API migration failed: resource-conversion-failed; rollback incomplete: Cluster clusters-guest/guest (cluster.hypershift.openshift.io) not deleted, Cluster clusters-guest/guest still paused, scope legacy missing: neither operator reconciles it',
          '',
        ],
      ],
    ],
    [
      'invalid pair',
      hc({ [`${HS}scope`]: 'legacy', [`${HS}private-capi-types`]: 'true' }),
      store(),
      [['error', 'both scope legacy and private-capi-types: neither operator owns it for sure', '']],
    ],
  ])('%s', (_name, h, s, expected) => {
    expect(brief(checkHostedCluster(h, s))).toEqual(expected);
  });

  it('is stuck, an error, once the lock has been held for 30 minutes', () => {
    const raw = checkHostedCluster(hc({ [`${HS}migration-in-progress`]: 'true' }), store());
    const now = new Date('2026-11-28T05:00:00Z');
    const held = (minutes: number) =>
      evaluate(raw, new Map([[findingKey(raw[0]!), new Date(now.getTime() - minutes * 60_000).toISOString()]]), now)
        .findings[0]!.severity;
    expect([held(29), held(30)]).toEqual(['info', 'error']);
  });
});

describe("HyperShift's CRD storage migration status", () => {
  const cm = (status: object | string): WatchedObject => ({
    metadata: { name: 'capi-migration-status', namespace: 'hypershift' },
    status: { status: typeof status === 'string' ? status : JSON.stringify(status) },
  });
  const c = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message });
  it.each([
    [
      'complete',
      cm({
        totalCRDs: 12,
        migratedCRDs: 12,
        conditions: [c('MigrationComplete', 'True', 'MigrationComplete', 'All 12 CRDs have been migrated')],
      }),
      [],
    ],
    [
      'in progress',
      cm({
        totalCRDs: 12,
        migratedCRDs: 5,
        conditions: [c('Progressing', 'True', 'MigrationInProgress', '5/12 CRDs migrated')],
      }),
      [['info', 'Cluster API storage migration in progress (5 of 12 CRDs migrated)', 'escalates']],
    ],
    [
      'failed',
      cm({
        totalCRDs: 12,
        migratedCRDs: 5,
        conditions: [
          c('Progressing', 'True', 'MigrationInProgress', '5/12 CRDs migrated'),
          c('Degraded', 'True', 'MigrationError', 'failed to migrate machines: conversion webhook unavailable'),
        ],
      }),
      [
        [
          'error',
          'Cluster API storage migration failed: MigrationError: failed to migrate machines: conversion webhook unavailable (5 of 12 CRDs migrated)',
          '',
        ],
      ],
    ],
    ['not JSON', cm('{'), [['warning', 'data.status is not JSON: the migration state is unknown', '']]],
  ])('%s', (_name, m, expected) => {
    expect(brief(checkMigrationStatus(m))).toEqual(expected);
  });
});

describe('a Cluster API object read as v1beta2', () => {
  it('is kept in the v1beta1 shape: v1beta2 conditions under v1beta2, the deprecated fields back in place', () => {
    const conditions = [{ type: 'Ready', status: 'False', reason: 'NotReady' }];
    expect(
      capiStatus({
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        status: {
          phase: 'Failed',
          conditions,
          deprecated: { v1beta1: { failureReason: 'CreateError', failureMessage: 'no capacity', conditions: [] } },
          initialization: { infrastructureProvisioned: true },
        },
      }),
    ).toEqual({
      phase: 'Failed',
      conditions: [],
      failureReason: 'CreateError',
      failureMessage: 'no capacity',
      v1beta2: { conditions },
    });
  });
});

describe('a Cluster API CRD as kept', () => {
  it('keeps the annotations it is judged by, not a last-applied copy of the whole CRD', () => {
    const annotations = {
      'include.release.openshift.io/single-node-developer': 'true',
      'crd-migration.cluster.x-k8s.io/observed-generation': '2',
      'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(200_000),
    };
    const kept = RESOURCE_BY_KEY.get('crds')!.project({
      metadata: { name: 'machines.cluster.hypershift.openshift.io', annotations },
      spec: { group: 'cluster.hypershift.openshift.io', versions: [] },
    });
    expect(kept?.metadata.annotations).toEqual({
      'include.release.openshift.io/single-node-developer': 'true',
      'crd-migration.cluster.x-k8s.io/observed-generation': '2',
    });
  });
});
