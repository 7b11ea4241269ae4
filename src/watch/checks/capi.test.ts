import { describe, expect, it } from 'vitest';
import type { WatchedObject } from '../model.js';
import { ObjectStore } from '../store.js';
import {
  checkCapi,
  checkCapiCrd,
  checkCluster,
  checkHostedCluster,
  checkMachine,
  checkReplicas,
  ownersOf,
} from './capi.js';

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
      'not Available (v1beta2)',
      checkCluster(
        obj(
          'sno',
          {},
          {
            phase: 'Provisioned',
            conditions: [{ type: 'Available', status: 'False', reason: 'InfrastructureNotReady' }],
          },
        ),
      ),
      [['warning', 'Available False: InfrastructureNotReady', 'escalates']],
    ],
    [
      'failed with a reason',
      checkCluster(obj('sno', {}, { phase: 'Failed', failureReason: 'InvalidConfiguration', failureMessage: 'bad' })),
      [['error', 'failed: InvalidConfiguration: bad', '']],
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
  },
): WatchedObject => ({
  metadata: {
    name,
    ...(marks.managers && { managers: marks.managers }),
    ...(marks.labels && { labels: marks.labels }),
    ...(marks.annotations && { annotations: marks.annotations }),
  },
  spec: {
    group: 'cluster.x-k8s.io',
    versions: [],
    ...(marks.service && {
      conversion: { strategy: 'Webhook', webhook: { clientConfig: { service: marks.service } } },
    }),
  },
});

describe('owners of the cluster.x-k8s.io CRDs', () => {
  const platform = {
    managers: ['cluster-capi-operator'],
    annotations: { 'include.release.openshift.io/single-node-developer': 'true' },
  };
  it.each([
    ['platform only', crd('machines.cluster.x-k8s.io', platform), undefined, []],
    [
      'platform and HyperShift',
      crd('machines.cluster.x-k8s.io', {
        ...platform,
        managers: ['cluster-capi-operator', 'hypershift'],
        service: { namespace: 'hypershift', name: 'operator' },
      }),
      undefined,
      [
        [
          'error',
          'has two owners: OpenShift (cluster-capi-operator) (field manager cluster-capi-operator, release manifest annotations) and HyperShift (field manager hypershift, conversion webhook hypershift/operator)',
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
      'HyperShift alone, not listed as unmanaged',
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
    ['no marks at all', crd('clusters.cluster.x-k8s.io', { managers: ['kubectl-create'] }), undefined, []],
  ])('%s', (_name, c, unmanaged, expected) => {
    expect(brief(checkCapiCrd(c, unmanaged))).toEqual(expected);
  });

  it('reads ownership from managers, webhook service and labels', () => {
    expect([
      ...ownersOf(crd('x', { service: { namespace: 'capi-system', name: 'capi-webhook-service' } })).keys(),
    ]).toEqual(['clusterctl']);
  });

  it('looks only at Cluster API CRDs, and knows whether the ClusterAPI operator config exists', () => {
    const s = new ObjectStore();
    s.apply({
      type: 'replace',
      resource: 'crds',
      objects: [
        crd('clusters.cluster.x-k8s.io', { managers: ['hypershift'] }),
        {
          metadata: { name: 'routes.route.openshift.io', managers: ['hypershift'] },
          spec: { group: 'route.openshift.io' },
        },
      ],
    });
    expect(brief(checkCapi(s))).toEqual([['warning', 'owned by HyperShift (field manager hypershift)', '']]);
    s.apply({ type: 'installed', resource: 'clusterapis', version: 'v1alpha1' });
    expect(brief(checkCapi(s))).toEqual([
      [
        'warning',
        'owned by HyperShift (field manager hypershift) but not listed as unmanaged in ClusterAPI cluster',
        '',
      ],
    ]);
  });
});

describe('HostedCluster private Cluster API migration', () => {
  const hc = (annotations: Record<string, string>) => obj('guest', {}, {}, annotations);
  const HS = 'hypershift.openshift.io/';
  it.each([
    ['migrated', hc({ [`${HS}private-capi-types`]: 'true' }), []],
    [
      'awaiting',
      hc({ [`${HS}scope`]: 'legacy' }),
      [['info', 'awaiting private Cluster API migration (scope legacy)', '']],
    ],
    [
      'in progress',
      hc({ [`${HS}migration-in-progress`]: 'true' }),
      [['info', 'private Cluster API migration in progress', 'escalates']],
    ],
    [
      'failed',
      hc({ [`${HS}migration-failed`]: 'health-check-timeout' }),
      [['error', 'private Cluster API migration failed: health-check-timeout', '']],
    ],
    [
      'invalid pair',
      hc({ [`${HS}scope`]: 'legacy', [`${HS}private-capi-types`]: 'true' }),
      [['error', 'both scope legacy and private-capi-types: neither operator owns it for sure', '']],
    ],
  ])('%s', (_name, h, expected) => {
    expect(brief(checkHostedCluster(h))).toEqual(expected);
  });
});
