import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { opensslCa } from '../../test/helpers/openssl.js';
import { testSite } from '../../test/node/context.js';
import { siteCaGiven } from '../certs/site-certs.js';
import type { NamedCertificate } from '../kube/openshift.js';
import { type DomainDecision, type DomainView, domainStep } from './domain.js';
import { wantedSecrets } from './domain/certificates.js';
import { mergeNamedCertificates, namedCertificateProblem } from './domain/named-certificate.js';
import { mergeIngress } from './domain/router.js';

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

describe('domain decisions', () => {
  const ingress = {
    apiVersion: 'config.openshift.io/v1',
    kind: 'Ingress',
    metadata: { name: 'cluster' },
    spec: { domain: 'apps.sno.factory.example.com' },
  };
  const apiserver = (named: NamedCertificate[] = []) => ({
    apiVersion: 'config.openshift.io/v1',
    kind: 'APIServer',
    metadata: { name: 'cluster' },
    spec: { servingCerts: { namedCertificates: named } },
  });
  const controller = (defaultCertificate?: string) => ({
    apiVersion: 'operator.openshift.io/v1',
    kind: 'IngressController',
    metadata: { name: 'default', namespace: 'openshift-ingress-operator' },
    spec: defaultCertificate ? { defaultCertificate: { name: defaultCertificate } } : {},
  });
  const view = (parts: Partial<DomainView> = {}): DomainView => ({
    domains,
    ingress,
    apiserver: apiserver(),
    ingressController: controller(),
    secrets: {},
    routes: [],
    caDir: '/var/lib/sno-relocate/site-ca',
    appsDomainsFile: '/var/lib/sno-relocate/previous-apps-domains.json',
    signers: {},
    now: new Date('2026-11-26T12:00:00Z'),
    ...parts,
  });
  const others = Array.from({ length: 10 }, (_, i) => ({
    names: [`n${i}.example.com`],
    servingCertificate: { name: `s${i}` },
  }));
  it.each([
    ['no APIServer config', view({ apiserver: undefined }), /apiserver.config.openshift.io\/cluster does not exist/],
    ['no IngressController', view({ ingressController: undefined }), /not found: the router's default certificate/],
    [
      "a default certificate of someone else's",
      view({ ingressController: controller('corporate') }),
      /names secret corporate/,
    ],
    ['eleven named certificates', view({ apiserver: apiserver(others) }), /at most 10/],
  ] as const)('refuses: %s', (_, v, reason) => {
    const plan = domainStep.plan(v, testSite({ baseDomain: 'store42.example.com' }));
    expect(plan).toMatchObject({ action: 'conflict', reason: expect.stringMatching(reason) });
  });

  it('plans the site CA, every secret, the three config writes and the routes to wait for on a factory cluster', () => {
    const plan = domainStep.plan(view(), testSite({ baseDomain: 'store42.example.com' }));
    if (plan.action !== 'change') throw new Error(`expected a change, got ${plan.action}`);
    const targets = plan.changes.map((c) => `${c.action} ${c.target}`);
    expect(targets[0]).toBe('create /var/lib/sno-relocate/site-ca');
    expect(targets.filter((t) => t.startsWith('create Secret'))).toHaveLength(5);
    expect(targets).toEqual(
      expect.arrayContaining([
        'update Ingress.config.openshift.io cluster',
        'update APIServer.config.openshift.io cluster',
        'update Route openshift-console/console',
      ]),
    );
    expect(JSON.stringify(plan)).not.toMatch(/PRIVATE KEY/);
  });

  const site = testSite({ baseDomain: 'store42.example.com' });
  const ours = { names: [domains.api], servingCertificate: { name: 'sno-relocate-api' } };
  const secretNames = [
    'openshift-ingress/sno-relocate-apps-wildcard',
    'openshift-config/sno-relocate-console',
    'openshift-config/sno-relocate-downloads',
    'openshift-config/sno-relocate-oauth',
    'openshift-config/sno-relocate-api',
  ];
  it.each<[string, Partial<DomainView>, Partial<DomainDecision>, string[]]>([
    [
      'a factory cluster: the site CA first, every secret issued by it, both certificates set',
      {},
      {
        createCa: { dir: '/var/lib/sno-relocate/site-ca', siteName: site.name },
        routerCertificate: true,
        namedCertificate: true,
      },
      [],
    ],
    [
      "the router already serves the agent's secret",
      { ingressController: controller('sno-relocate-apps-wildcard') },
      { routerCertificate: false, namedCertificate: true },
      [],
    ],
    [
      "the API's named certificate already in place",
      { apiserver: apiserver([ours]) },
      { routerCertificate: true, namedCertificate: false },
      [],
    ],
    [
      'relocated before: the apps domain it leaves is kept for the routes step',
      { ingress: { ...ingress, spec: { ...ingress.spec, appsDomain: 'apps.sno.store7.example.com' } } },
      { rememberAppsDomain: 'apps.sno.store7.example.com' },
      ['update /var/lib/sno-relocate/previous-apps-domains.json'],
    ],
  ])('decides: %s', (_, parts, decided, listed) => {
    const plan = domainStep.plan(view(parts), site);
    if (plan.action !== 'change') throw new Error(`expected a change, got ${plan.action}`);
    expect(plan.decision).toMatchObject({ domains, now: '2026-11-26T12:00:00.000Z', ...decided });
    expect(plan.decision.secrets.map((w) => `${w.namespace}/${w.name}`)).toEqual(secretNames);
    expect(plan.decision.secrets.every((w) => !w.exists && !w.pair && !w.issuer)).toBe(true);
    expect(plan.decision.rememberAppsDomain).toBe(decided.rememberAppsDomain);
    expect(plan.changes.map((c) => `${c.action} ${c.target}`)).toEqual(expect.arrayContaining(listed));
    expect(plan.changes.some((c) => c.target.endsWith('previous-apps-domains.json'))).toBe(listed.length > 0);
  });

  it('issues under the site CA it has, named in the decision, and creates none', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'domain-ca-'));
    const files = opensslCa(dir, 'store42-site-ca');
    const ca = siteCaGiven({ certPem: readFileSync(files.crt, 'utf8'), keyPem: readFileSync(files.key, 'utf8') })!;
    const plan = domainStep.plan(view({ ca }), site);
    if (plan.action !== 'change') throw new Error(`expected a change, got ${plan.action}`);
    expect(plan.decision.createCa).toBeUndefined();
    expect(plan.changes.map((c) => c.target)).not.toContain('/var/lib/sno-relocate/site-ca');
    for (const w of plan.decision.secrets) {
      expect(w.issuer?.certPem).toBe(ca.certPem);
      expect(w.issuer?.keyPem).toMatch(/BEGIN PRIVATE KEY/);
    }
    // the decision holds the issuer's key; what `plan` shows does not
    expect(JSON.stringify({ summary: plan.summary, changes: plan.changes })).not.toMatch(/PRIVATE KEY/);
  });
});
