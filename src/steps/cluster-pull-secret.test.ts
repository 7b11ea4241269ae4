import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import { desiredPullSecret } from '../registry/pull-secret.js';
import { clusterPullSecretStep } from './cluster-pull-secret.js';

const site = { auths: { 'registry.site.example.com': { auth: 'c2l0ZTp0b2tlbg==' } } };

describe('desiredPullSecret', () => {
  it('replaces whatever is there', () => {
    expect(desiredPullSecret(site, 'replace', { value: { auths: { 'quay.io': { auth: 'x' } } } })).toEqual(site);
    expect(desiredPullSecret(site, 'replace', { unreadable: 'bad' })).toEqual(site);
  });

  it('merges into the current auths, the site winning for a registry in both, other keys kept', () => {
    const current = {
      auths: { 'quay.io': { auth: 'cXVheQ==' }, 'registry.site.example.com': { auth: 'b2xk' } },
      credsStore: 'x',
    };
    expect(desiredPullSecret(site, 'merge', { value: current })).toEqual({
      auths: { 'quay.io': { auth: 'cXVheQ==' }, 'registry.site.example.com': { auth: 'c2l0ZTp0b2tlbg==' } },
      credsStore: 'x',
    });
    expect(desiredPullSecret(site, 'merge', {})).toEqual(site);
  });

  it('says why it cannot merge, without quoting the secret', () => {
    expect(
      desiredPullSecret(site, 'merge', { unreadable: 'Secret openshift-config/pull-secret does not hold valid JSON' }),
    ).toMatch(/cannot be merged/);
    expect(desiredPullSecret(site, 'merge', { value: { auths: ['x'] } })).toMatch(/no "auths" object/);
  });
});

describe('cluster-pull-secret decisions', () => {
  const CONTEXT = '/var/lib/sno-relocate/watch-context.json';
  const secret = (value: unknown) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'pull-secret', namespace: 'openshift-config' },
    data: { '.dockerconfigjson': Buffer.from(JSON.stringify(value)).toString('base64') },
  });
  const garbled = { ...secret({}), data: { '.dockerconfigjson': Buffer.from('{"auths": ').toString('base64') } };
  const factory = { auths: { 'quay.io': { auth: 'x' } } };
  const keep = { factoryRegistries: [] };
  it.each([
    ['no pull secret in the site-config', undefined, undefined, 'replace', 'noop', [], undefined],
    [
      'none on the cluster',
      undefined,
      site,
      'replace',
      'change',
      ['create Secret openshift-config/pull-secret'],
      { write: 'create', policy: 'replace', pullSecret: site, ...keep },
    ],
    ["the site's already", secret(site), site, 'replace', 'noop', [], undefined],
    [
      'the factory one, replaced: its registry kept for the watcher',
      secret(factory),
      site,
      'replace',
      'change',
      ['update Secret openshift-config/pull-secret', `update ${CONTEXT}`],
      { write: 'update', policy: 'replace', pullSecret: site, factoryRegistries: ['quay.io'] },
    ],
    [
      'the factory one, merged into',
      secret(factory),
      site,
      'merge',
      'change',
      ['update Secret openshift-config/pull-secret'],
      { write: 'update', policy: 'merge', pullSecret: site, ...keep },
    ],
    ['merged in already', secret({ auths: { ...site.auths } }), site, 'merge', 'noop', [], undefined],
    ['unreadable, merge', garbled, site, 'merge', 'conflict', [], undefined],
    [
      'unreadable, replace',
      garbled,
      site,
      'replace',
      'change',
      ['update Secret openshift-config/pull-secret'],
      { write: 'update', policy: 'replace', pullSecret: site, ...keep },
    ],
  ] as const)('%s', (_, current, pullSecret, pullSecretPolicy, action, changes, decision) => {
    const plan = clusterPullSecretStep.plan(
      { ...(current && { secret: current }), contextFile: CONTEXT },
      testSite({ ...(pullSecret && { pullSecret }), pullSecretPolicy }),
    );
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => `${c.action} ${c.target}`) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
    // never a credential in what the plan shows (the decision, which holds them, is never shown)
    const { decision: _held, ...shown } = plan as typeof plan & { decision?: unknown };
    expect(JSON.stringify(shown)).not.toContain('c2l0ZTp0b2tlbg==');
  });
});
