import { describe, expect, it } from 'vitest';
import { EMPTY_CONTEXT, type WatchContext, type WatchedObject } from '../model.js';
import { ObjectStore } from '../store.js';
import { checkCatalogSource, checkCsv, checkInstallPlan, checkPackagesApi, checkSubscription } from './olm.js';

const SITE: WatchContext = {
  siteRegistries: ['registry.store42.example.com:5000'],
  digestMirrorSources: ['quay.io/openshift-release-dev/ocp-release', 'registry.redhat.io/redhat'],
  tagMirrorSources: [],
  factoryRegistries: ['registry.factory.example.com:5000'],
};

const catalog = (
  spec: Record<string, unknown>,
  state?: string,
  status: Record<string, unknown> = {},
): WatchedObject => ({
  metadata: { name: 'redhat-operators', namespace: 'openshift-marketplace' },
  spec: { sourceType: 'grpc', ...spec },
  status: { ...(state && { connectionState: { lastObservedState: state } }), ...status },
});
const brief = (findings: { severity: string; reason: string; escalate?: unknown }[]) =>
  findings.map((f) => [f.severity, f.reason, f.escalate ? 'escalates' : '']);

describe('CatalogSource', () => {
  const tagged = { image: 'registry.redhat.io/redhat/redhat-operator-index:v4.16' };
  it.each([
    ['READY, no site context', EMPTY_CONTEXT, catalog(tagged, 'READY'), []],
    [
      'READY but pulled by tag under digest-only mirrors',
      SITE,
      catalog(tagged, 'READY'),
      [
        [
          'warning',
          'image registry.redhat.io/redhat/redhat-operator-index:v4.16 is pulled by tag and only digest mirrors cover it',
          '',
        ],
      ],
    ],
    [
      'TRANSIENT_FAILURE explained by the tag pull',
      SITE,
      catalog(tagged, 'TRANSIENT_FAILURE'),
      [
        [
          'warning',
          'image registry.redhat.io/redhat/redhat-operator-index:v4.16 is pulled by tag and only digest mirrors cover it',
          '',
        ],
        ['warning', 'TRANSIENT_FAILURE; its image is pulled by tag and only digest mirrors exist', 'escalates'],
      ],
    ],
    [
      'CONNECTING starts as a note',
      EMPTY_CONTEXT,
      catalog(tagged, 'CONNECTING'),
      [['info', 'CONNECTING', 'escalates']],
    ],
    ['SHUTDOWN', EMPTY_CONTEXT, catalog(tagged, 'SHUTDOWN'), [['warning', 'SHUTDOWN', 'escalates']]],
    ['no state yet', EMPTY_CONTEXT, catalog(tagged), [['info', 'no connection state reported yet', 'escalates']]],
    [
      'image on the factory registry',
      SITE,
      catalog({ image: 'registry.factory.example.com:5000/olm/index@sha256:' + 'b'.repeat(64) }, 'READY'),
      [
        [
          'error',
          `image registry.factory.example.com:5000/olm/index@sha256:${'b'.repeat(64)} is on the factory registry`,
          '',
        ],
      ],
    ],
    [
      'tag mirror covers a tag pull',
      { ...SITE, tagMirrorSources: ['registry.redhat.io/redhat'] },
      catalog(tagged, 'READY'),
      [],
    ],
    [
      'digest pull under digest mirrors',
      SITE,
      catalog({ image: `registry.redhat.io/redhat/redhat-operator-index@sha256:${'c'.repeat(64)}` }, 'READY'),
      [],
    ],
    [
      'registry the site does not mirror',
      SITE,
      catalog({ image: 'quay.io/acme/catalog:v1' }, 'READY'),
      [['warning', 'image quay.io/acme/catalog:v1 is on a registry the site does not mirror', '']],
    ],
    [
      'HyperShift address-only source',
      EMPTY_CONTEXT,
      catalog({ address: 'redhat-operators:50051' }, 'TRANSIENT_FAILURE'),
      [['info', 'TRANSIENT_FAILURE (served from redhat-operators:50051, outside this cluster)', '']],
    ],
    [
      'registry server error',
      EMPTY_CONTEXT,
      catalog(tagged, 'READY', { reason: 'RegistryServerError', message: 'pod failed' }),
      [['error', 'RegistryServerError: pod failed', '']],
    ],
  ])('%s', (_name, ctx, cs, expected) => {
    expect(brief(checkCatalogSource(ctx, cs))).toEqual(expected);
  });

  it('names the object as Kind namespace/name', () => {
    expect(checkCatalogSource(EMPTY_CONTEXT, catalog(tagged, 'SHUTDOWN'))[0]!.object).toBe(
      'CatalogSource openshift-marketplace/redhat-operators',
    );
  });
});

describe('Subscription', () => {
  const sub = (conditions: Record<string, string>[], state?: string): WatchedObject => ({
    metadata: { name: 'odf', namespace: 'openshift-storage' },
    status: { conditions, ...(state && { state }) },
  });
  it.each([
    [
      'healthy',
      sub([{ type: 'CatalogSourcesUnhealthy', status: 'False', reason: 'AllCatalogSourcesHealthy' }], 'AtLatestKnown'),
      [],
    ],
    [
      'unhealthy catalogs',
      sub([{ type: 'CatalogSourcesUnhealthy', status: 'True', reason: 'UnhealthyCatalogSourceFound' }]),
      [['warning', 'CatalogSourcesUnhealthy: UnhealthyCatalogSourceFound', '']],
    ],
    [
      'resolution failed',
      sub([
        {
          type: 'ResolutionFailed',
          status: 'True',
          reason: 'ConstraintsNotSatisfiable',
          message: 'no operators found',
        },
      ]),
      [['error', 'ResolutionFailed: ConstraintsNotSatisfiable: no operators found', '']],
    ],
    [
      'manual approval pending',
      sub([{ type: 'InstallPlanPending', status: 'True', reason: 'RequiresApproval' }]),
      [['info', 'an InstallPlan waits for manual approval', '']],
    ],
    ['upgrade failed without a condition', sub([], 'UpgradeFailed'), [['error', 'UpgradeFailed', '']]],
  ])('%s', (_name, s, expected) => {
    expect(brief(checkSubscription(s))).toEqual(expected);
  });

  it('dates a finding from its condition', () => {
    const [f] = checkSubscription(
      sub([{ type: 'ResolutionFailed', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }]),
    );
    expect(f!.since).toBe('2026-01-01T00:00:00Z');
  });
});

describe('InstallPlan and ClusterServiceVersion', () => {
  const ip = (status: Record<string, unknown>): WatchedObject => ({
    metadata: { name: 'install-abc', namespace: 'ns' },
    status,
  });
  const csv = (status: Record<string, unknown>): WatchedObject => ({
    metadata: { name: 'odf.v4.16', namespace: 'ns' },
    status,
  });
  it.each([
    ['complete plan', checkInstallPlan(ip({ phase: 'Complete' })), []],
    [
      'failed plan with its Installed condition',
      checkInstallPlan(
        ip({
          phase: 'Failed',
          conditions: [{ type: 'Installed', status: 'False', reason: 'InstallComponentFailed', message: 'forbidden' }],
        }),
      ),
      [['error', 'Failed: InstallComponentFailed: forbidden', '']],
    ],
    ['installing plan', checkInstallPlan(ip({ phase: 'Installing' })), [['info', 'Installing', 'escalates']]],
    ['succeeded CSV', checkCsv(csv({ phase: 'Succeeded', reason: 'InstallSucceeded' })), []],
    [
      'failed CSV',
      checkCsv(csv({ phase: 'Failed', reason: 'InstallCheckFailed', message: 'deployment not ready' })),
      [['error', 'Failed: InstallCheckFailed: deployment not ready', '']],
    ],
    [
      'installing CSV',
      checkCsv(csv({ phase: 'Installing', reason: 'InstallWaiting' })),
      [['warning', 'Installing: InstallWaiting', 'escalates']],
    ],
    ['replacing CSV', checkCsv(csv({ phase: 'Replacing' })), [['info', 'Replacing', '']]],
  ])('%s', (_name, findings, expected) => {
    expect(brief(findings)).toEqual(expected);
  });

  it('hints at certificates when OLM needs to rotate them', () => {
    expect(checkCsv(csv({ phase: 'Failed', reason: 'NeedsCertRotation' }))[0]!.hint).toMatch(/serving certificates/);
  });
});

describe('packages APIService', () => {
  const store = (installOlm: boolean, available?: string) => {
    const s = new ObjectStore();
    if (installOlm) s.apply({ type: 'installed', resource: 'clusterserviceversions', version: 'v1alpha1' });
    if (available)
      s.apply({
        type: 'upsert',
        resource: 'apiservices',
        object: {
          metadata: { name: 'v1.packages.operators.coreos.com' },
          status: { conditions: [{ type: 'Available', status: available, reason: 'ServiceNotFound' }] },
        },
      });
    return s;
  };
  it.each([
    ['no OLM, no service', store(false), []],
    ['OLM but no service', store(true), [['warning', 'not registered: PackageManifests cannot be listed', '']]],
    ['Available', store(true, 'True'), []],
    ['not Available', store(true, 'False'), [['error', 'not Available: ServiceNotFound', '']]],
  ])('%s', (_name, s, expected) => {
    expect(brief(checkPackagesApi(s))).toEqual(expected);
  });
});
