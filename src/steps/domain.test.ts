import { describe, expect, it } from 'vitest';
import { mergeIngress, mergeNamedCertificates, wantedSecrets, namedCertificateProblem } from './domain.js';

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
  const FACTORY = 'apps.sno.factory.example.com';
  it('names the router wildcard (in openshift-ingress), console, downloads, oauth and api; the site ingress pair serves every apps name', () => {
    const pair = { certPem: 'c', keyPem: 'k' };
    const wanted = wantedSecrets(domains, FACTORY, { ingress: pair });
    expect(wanted.map((w) => [w.namespace, w.name, w.names.join(' '), w.given ? w.field : 'site CA'])).toEqual([
      ['openshift-ingress', 'sno-relocate-apps-wildcard', `*.${domains.apps}`, 'spec.certificates.ingress'],
      [
        'openshift-config',
        'sno-relocate-console',
        `console-openshift-console.${domains.apps}`,
        'spec.certificates.ingress',
      ],
      [
        'openshift-config',
        'sno-relocate-downloads',
        `downloads-openshift-console.${domains.apps}`,
        'spec.certificates.ingress',
      ],
      ['openshift-config', 'sno-relocate-oauth', `oauth-openshift.${domains.apps}`, 'spec.certificates.ingress'],
      ['openshift-config', 'sno-relocate-api', domains.api, 'site CA'],
    ]);
  });
  it("signs a router certificate for the factory's apps domain too, where the canary and the operators' default routes stay", () => {
    expect(wantedSecrets(domains, FACTORY, {})[0]!.names).toEqual([`*.${domains.apps}`, `*.${FACTORY}`]);
  });
});

describe('namedCertificateProblem', () => {
  const ours = { names: [domains.api], servingCertificate: { name: 'sno-relocate-api' } };
  const other = (i: number, names = [`api${i}.example.net`]) => ({ names, servingCertificate: { name: `other-${i}` } });
  it('accepts up to 10 entries with names of their own', () => {
    expect(namedCertificateProblem([...Array.from({ length: 9 }, (_, i) => other(i)), ours], domains)).toBeUndefined();
  });
  it('refuses an 11th entry, as the kube-apiserver operator would', () => {
    expect(namedCertificateProblem([...Array.from({ length: 10 }, (_, i) => other(i)), ours], domains)).toBe(
      "apiserver.config spec.servingCerts.namedCertificates: 11 entries with the site's, and the kube-apiserver operator accepts at most 10: remove 1 of the others",
    );
  });
  it("refuses when another entry already names the site's API host", () => {
    expect(namedCertificateProblem([other(1, ['x.example.net', domains.api]), ours], domains)).toBe(
      `apiserver.config spec.servingCerts.namedCertificates: the entry for secret other-1 already names ${domains.api}, and the kube-apiserver operator refuses a name held by two entries: remove ${domains.api} from that entry`,
    );
  });
});
