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
  const secret = (value: unknown) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'pull-secret', namespace: 'openshift-config' },
    data: { '.dockerconfigjson': Buffer.from(JSON.stringify(value)).toString('base64') },
  });
  const garbled = { ...secret({}), data: { '.dockerconfigjson': Buffer.from('{"auths": ').toString('base64') } };
  it.each([
    ['no pull secret in the site-config', {}, undefined, 'replace', 'noop', undefined],
    ['none on the cluster', {}, site, 'replace', 'change', 'create'],
    ["the site's already", { secret: secret(site) }, site, 'replace', 'noop', undefined],
    [
      'the factory one, replaced',
      { secret: secret({ auths: { 'quay.io': { auth: 'x' } } }) },
      site,
      'replace',
      'change',
      'update',
    ],
    ['merged in already', { secret: secret({ auths: { ...site.auths } }) }, site, 'merge', 'noop', undefined],
    ['unreadable, merge', { secret: garbled }, site, 'merge', 'conflict', undefined],
    ['unreadable, replace', { secret: garbled }, site, 'replace', 'change', 'update'],
  ] as const)('%s', (_, view, pullSecret, pullSecretPolicy, action, change) => {
    const plan = clusterPullSecretStep.plan(view, testSite({ ...(pullSecret && { pullSecret }), pullSecretPolicy }));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes[0]!.action : undefined).toBe(change);
    // never a credential in the plan
    expect(JSON.stringify(plan)).not.toContain('c2l0ZTp0b2tlbg==');
  });
});
