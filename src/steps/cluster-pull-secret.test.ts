import { describe, expect, it } from 'vitest';
import { desiredPullSecret } from './cluster-pull-secret.js';

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
