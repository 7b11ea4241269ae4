import { describe, expect, it } from 'vitest';
import { mergeIngress, mergeNamedCertificates, wantedSecrets } from './domain.js';

const domains = { cluster: 'sno', apps: 'apps.sno.store42.example.com', api: 'api.sno.store42.example.com' };

describe('mergeIngress', () => {
  it('sets appsDomain and replaces the three component routes in place, keeping the rest', () => {
    const merged = mergeIngress(
      {
        domain: 'apps.sno.factory.example.com',
        componentRoutes: [
          { namespace: 'store-tools', name: 'tools', hostname: 'tools.example.net' },
          {
            namespace: 'openshift-console',
            name: 'console',
            hostname: 'console.old.example.com',
            servingCertKeyPairSecret: { name: 'old' },
          },
        ],
      },
      domains,
    );
    expect(merged.domain).toBe('apps.sno.factory.example.com');
    expect(merged.appsDomain).toBe(domains.apps);
    expect(
      merged.componentRoutes!.map(
        (r) => `${r.namespace}/${r.name} ${r.hostname} ${r.servingCertKeyPairSecret?.name ?? '-'}`,
      ),
    ).toEqual([
      'store-tools/tools tools.example.net -',
      `openshift-console/console console-openshift-console.${domains.apps} sno-relocate-console`,
      `openshift-console/downloads downloads-openshift-console.${domains.apps} sno-relocate-downloads`,
      `openshift-authentication/oauth-openshift oauth-openshift.${domains.apps} sno-relocate-oauth`,
    ]);
    expect(mergeIngress(merged, domains)).toEqual(merged);
  });
});

describe('mergeNamedCertificates', () => {
  it('keeps entries it does not own and holds exactly one of its own', () => {
    const foreign = { names: ['api.other.example.com'], servingCertificate: { name: 'foreign-cert' } };
    const once = mergeNamedCertificates([foreign], domains);
    expect(once).toEqual([foreign, { names: [domains.api], servingCertificate: { name: 'sno-relocate-api' } }]);
    expect(mergeNamedCertificates(once, domains)).toEqual(once);
    const moved = mergeNamedCertificates(once, { ...domains, api: 'api.sno.store77.example.com' });
    expect(moved).toEqual([
      foreign,
      { names: ['api.sno.store77.example.com'], servingCertificate: { name: 'sno-relocate-api' } },
    ]);
  });
});

describe('wantedSecrets', () => {
  it('names the apps wildcard, console, downloads, oauth and api; the site ingress pair serves every apps name', () => {
    const pair = { certPem: 'c', keyPem: 'k' };
    const wanted = wantedSecrets(domains, { ingress: pair });
    expect(wanted.map((w) => [w.name, w.names[0], w.given ? w.field : 'site CA'])).toEqual([
      ['sno-relocate-apps-wildcard', `*.${domains.apps}`, 'spec.certificates.ingress'],
      ['sno-relocate-console', `console-openshift-console.${domains.apps}`, 'spec.certificates.ingress'],
      ['sno-relocate-downloads', `downloads-openshift-console.${domains.apps}`, 'spec.certificates.ingress'],
      ['sno-relocate-oauth', `oauth-openshift.${domains.apps}`, 'spec.certificates.ingress'],
      ['sno-relocate-api', domains.api, 'site CA'],
    ]);
  });
});
