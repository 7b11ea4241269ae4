/**
 * Site CAs as organisations make them with openssl (RSA 2048/3072/4096, ECDSA P-256/P-384, an RSA
 * root with an EC intermediate): the site-config is accepted, and the serving certificates signed
 * with them verify with `openssl verify` against the root, carry the intermediates, name the issuer
 * byte for byte and identify its key. CAs the agent cannot or must not sign with are refused by
 * `validate`, naming the field.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { certificatesIn } from '../../src/base/pem.js';
import { loadSiteConfig } from '../../src/config/load.js';
import { decideClock } from '../../src/base/true-time.js';
import { issueServing, servingProblem, siteCaGiven } from '../../src/certs/site-certs.js';
import { runAgent, writeSiteFolder } from '../node/cli.js';
import { datedCa, intermediateCa, openssl, rootCa, type KeyKind, type OpensslCa } from './openssl-cas.js';

const work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-ca-types-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const NAMES = ['console-openshift-console.apps.sno.store42.example.com'];
const DAY_MS = 86_400_000;

function siteFolder(name: string, site: { crt: string; key: string }, client: { crt: string }): string {
  return writeSiteFolder(
    path.join(work, name),
    'store-0042',
    {
      baseDomain: 'store42.example.com',
      clusterName: 'sno',
      hostname: 'sno-factory',
      network: { nmstate: { interfaces: [] }, internalIP: '192.168.127.10/24' },
      access: { clientCAFile: 'client-ca.crt', siteCA: { certFile: 'site-ca.crt', keyFile: 'site-ca.key' } },
    },
    {
      'client-ca.crt': readFileSync(client.crt, 'utf8'),
      'site-ca.crt': readFileSync(site.crt, 'utf8'),
      'site-ca.key': readFileSync(site.key, 'utf8'),
    },
  );
}

/** The DER of a certificate's issuer or subject Name, cut from the certificate as openssl parses it. */
function nameDer(pem: string, which: 'issuer' | 'subject'): string {
  const cert = certificatesIn(pem)[0]!;
  const der = cert.raw;
  // the TBSCertificate's fields: [0] version, serial, signature, issuer, validity, subject, ...
  const fields = openssl(['asn1parse'], cert.toString())
    .split('\n')
    .filter((l) => /\bd=2\b/.test(l));
  const m = /^\s*(\d+):d=2\s+hl=(\d+)\s+l=\s*(\d+)/.exec(fields[which === 'issuer' ? 3 : 5]!)!;
  const [start, header, length] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return der.subarray(start, start + header + length).toString('hex');
}

const ext = (pem: string, name: string) =>
  openssl(['x509', '-noout', '-ext', name], pem).split('\n').slice(1).join('').trim();

const CASES: [string, (dir: string) => OpensslCa, RegExp][] = [
  ['RSA 2048 (openssl req -x509 defaults, no keyUsage)', (d) => rootCa(d, 'rsa2048', 'rsa2048'), /sha256WithRSA/],
  ['RSA 3072', (d) => rootCa(d, 'rsa3072', 'rsa3072'), /sha256WithRSA/],
  ['RSA 4096', (d) => rootCa(d, 'rsa4096', 'rsa4096'), /sha256WithRSA/],
  ['ECDSA P-256', (d) => rootCa(d, 'p256', 'p256'), /ecdsa-with-SHA256/],
  ['ECDSA P-384', (d) => rootCa(d, 'p384', 'p384'), /ecdsa-with-SHA384/],
  [
    'an EC P-256 intermediate under an RSA 4096 root',
    (d) => intermediateCa(d, 'ec-issuing', 'p256', rootCa(d, 'rsa-root', 'rsa4096')),
    /ecdsa-with-SHA256/,
  ],
];

describe('site CAs made by openssl', () => {
  it.each(CASES)('%s: accepted, and its certificates verify against the root', async (label, make, algorithm) => {
    const dir = path.join(work, label.replace(/\W+/g, '-'));
    const ca = make(dir);
    const loaded = await loadSiteConfig(siteFolder(`${path.basename(dir)}-site`, ca, ca), new Date());
    expect(loaded.findings.filter((f) => f.severity === 'error')).toEqual([]);
    const siteCa = siteCaGiven(loaded.site.access?.siteCa)!;
    const now = new Date();
    const pair = await issueServing(NAMES, siteCa, now);

    const [leaf, ...served] = pair.certPem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n/g)!;
    const issuing = readFileSync(ca.crt, 'utf8');
    const intermediates = ca.root === ca.crt ? [] : [certificatesIn(issuing)[0]!.toString()];
    // the served chain: the leaf, then the intermediates, never the root the client already trusts
    expect(served).toEqual(intermediates);
    const untrusted = path.join(dir, 'served-chain.pem');
    writeFileSync(untrusted, served.join('') || leaf!);
    const leafFile = path.join(dir, 'leaf.pem');
    writeFileSync(leafFile, leaf!);
    expect(
      openssl([
        'verify', '-CAfile', ca.root, '-untrusted', untrusted, '-purpose', 'sslserver', '-verify_hostname', NAMES[0]!,
        leafFile,
      ]), // prettier-ignore
    ).toBe(`${leafFile}: OK\n`);
    expect(openssl(['x509', '-noout', '-text'], leaf)).toMatch(algorithm);
    expect(nameDer(leaf!, 'issuer')).toBe(nameDer(issuing, 'subject'));
    expect(ext(leaf!, 'authorityKeyIdentifier')).toBe(ext(issuing, 'subjectKeyIdentifier'));
    // the agent's own key stays P-256 whatever the CA's
    expect(openssl(['x509', '-noout', '-text'], leaf)).toContain('NIST CURVE: P-256');
    expect(servingProblem(pair, NAMES, siteCa, now)).toBeUndefined();
  });

  it('refuses to hand out a certificate that does not verify, and finds a served chain without its intermediate', async () => {
    const dir = path.join(work, 'refusals');
    const ca = intermediateCa(dir, 'issuing', 'p384', rootCa(dir, 'root', 'rsa2048'));
    const loaded = await loadSiteConfig(siteFolder('refusals-site', ca, ca), new Date());
    const siteCa = siteCaGiven(loaded.site.access?.siteCa)!;
    const now = new Date();
    // at a time the CAs are no longer valid the certificate would not verify: nothing is issued
    const later = new Date(now.getTime() + 400 * 86_400_000);
    await expect(issueServing(NAMES, siteCa, later)).rejects.toThrow(/does not verify against the site CA: .*expired/);
    const pair = await issueServing(NAMES, siteCa, now);
    const leafOnly = { ...pair, certPem: certificatesIn(pair.certPem)[0]!.toString() };
    expect(servingProblem(leafOnly, NAMES, siteCa, now)).toMatch(/served chain lacks O=Store Corp, CN=issuing/);
  });
});

describe('CAs the agent cannot or must not sign with are refused, naming the field', () => {
  const validate = (name: string, site: { crt: string; key: string }, client: { crt: string } = site) =>
    runAgent(['validate', siteFolder(name, site, client)], {});
  const fine = () => rootCa(path.join(work, 'fine'), 'fine', 'p256');

  it.each([
    ['rsa1024', 'RSA 1024'],
    ['p521', 'ECDSA P-521'],
    ['ed25519', 'ed25519'],
  ] as [KeyKind, string][])('a %s site CA and client CA', (kind, type) => {
    const ca = rootCa(path.join(work, `weak-${kind}`), kind, kind);
    const r = validate(`weak-${kind}-site`, ca);
    expect(r.code).toBe(2);
    for (const field of ['siteCA.certFile', 'siteCA.keyFile', 'clientCAFile'])
      expect(r.stderr).toContain(`error: $.spec.access.${field}: `);
    expect(r.stderr).toContain(`has a key of type ${type}; supported: RSA 2048, 3072 or 4096, or ECDSA P-256 or P-384`);
  });

  it('credentials refuses a --key of a type it cannot sign with', () => {
    const ca = fine();
    const weak = rootCa(path.join(work, 'weak-key'), 'weak-key', 'ed25519');
    const out = path.join(work, 'weak.kubeconfig');
    const r = runAgent(
      ['credentials', '--site', siteFolder('weak-key-site', ca, ca), '--key', weak.key, '--out', out],
      {},
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--key: ${weak.key} holds a key of type ed25519; supported: RSA 2048`);
    expect(existsSync(out)).toBe(false);
  });

  it('a site CA whose key is not its certificate', () => {
    const ca = fine();
    const other = rootCa(path.join(work, 'other'), 'other', 'rsa2048');
    const r = validate('mismatch-site', { crt: ca.crt, key: other.key });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'error: $.spec.access.siteCA.keyFile: the private key does not belong to O=Store Corp, CN=fine, nor to any certificate of the file: give the key of O=Store Corp, CN=fine',
    );
  });

  it("a site CA file with the root first and the issuing CA's key: the order is named, not the key", () => {
    const dir = path.join(work, 'root-first');
    const ca = intermediateCa(dir, 'issuing', 'rsa2048', rootCa(dir, 'root', 'rsa4096'));
    const [issuing, root] = certificatesIn(readFileSync(ca.crt, 'utf8'));
    const rootFirst = path.join(dir, 'root-first.crt');
    writeFileSync(rootFirst, root!.toString() + issuing!.toString());
    const r = validate('root-first-site', { crt: rootFirst, key: ca.key }, fine());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      "error: $.spec.access.siteCA.certFile: the key is the key of certificate 2 (O=Store Corp, CN=issuing), not of the first (O=Store Corp, CN=root): the file must begin with the certificate of this key: put O=Store Corp, CN=issuing first, then each certificate's issuer up to the root",
    );
    expect(r.stderr).not.toContain('does not match');
  });

  it('an expired site CA and an expired client CA, each said once', () => {
    const expired = datedCa(path.join(work, 'expired'), 'expired-ca', '20200101000000Z', '20210101000000Z');
    const site = validate('expired-site', expired, fine());
    expect(site.code).toBe(2);
    expect(site.stderr).toMatch(/error: \$\.spec\.access\.siteCA\.certFile: .*expired on 2021-01-01T00:00:00\.000Z/);
    // the summary's lines: one per problem
    expect(site.stderr.match(/^ {2}error: .*expired on/gm)).toHaveLength(1);
    const client = validate('expired-client', fine(), expired);
    expect(client.code).toBe(2);
    expect(client.stderr).toMatch(/error: \$\.spec\.access\.clientCAFile: .*expired on 2021-01-01T00:00:00\.000Z/);
  });

  // OpenSSL (node:crypto) does not count a certificate whose keyUsage lacks keyCertSign as a CA at all
  it('a CA whose keyUsage lacks keyCertSign', () => {
    const noSign = rootCa(path.join(work, 'no-sign'), 'no-sign', 'rsa2048', [
      'basicConstraints=critical,CA:TRUE',
      'keyUsage=critical,digitalSignature,cRLSign',
    ]);
    const r = validate('no-sign-site', noSign);
    expect(r.code).toBe(2);
    for (const field of ['siteCA.certFile', 'clientCAFile'])
      expect(r.stderr).toContain(
        `error: $.spec.access.${field}: O=Store Corp, CN=no-sign says CA:TRUE, but its keyUsage lacks keyCertSign, so it may not sign certificates: have it reissued with keyUsage keyCertSign (and cRLSign)`,
      );
  });

  it('a site CA file whose chain is out of order', () => {
    const dir = path.join(work, 'order');
    const ca = intermediateCa(dir, 'issuing', 'p256', rootCa(dir, 'root', 'rsa2048'));
    const [issuing, root] = certificatesIn(readFileSync(ca.crt, 'utf8'));
    const swapped = path.join(dir, 'swapped.crt');
    writeFileSync(swapped, root!.toString() + issuing!.toString());
    const r = validate('order-site', { crt: swapped, key: path.join(dir, 'root.key') }, fine());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'error: $.spec.access.siteCA.certFile: certificate 2 (O=Store Corp, CN=issuing) did not issue certificate 1 (O=Store Corp, CN=root)',
    );
  });

  it.each([
    ['six months behind: the CAs look not yet valid', -1],
    ['six months ahead: the CAs look expired', 1],
  ] as const)(
    'a clock %s: on a clock chronyd has not synchronised both are deferred, and valid again on the synchronised clock',
    async (_, direction) => {
      // an RSA root and an EC issuing CA made a week ago for 90 days, as the site's PKI made them
      const dir = path.join(work, `clock-${direction}`);
      const day = (d: number) => new Date(Date.now() + d * DAY_MS).toISOString().replace(/[-:T]|\.\d+/g, '');
      const root = datedCa(dir, 'dated-root', day(-7), day(83));
      const site = intermediateCa(dir, 'dated-issuing', 'p256', root);
      const folder = siteFolder(`clock-${direction}-site`, site, root);
      const wrong = new Date(Date.now() + direction * 182 * DAY_MS);
      const fields = ['$.spec.access.clientCAFile', '$.spec.access.siteCA.certFile'];
      // synchronised (or no chronyd): refused at once, naming both fields
      await expect(loadSiteConfig(folder, wrong)).rejects.toThrow(
        new RegExp(fields.map((f) => f.replace(/[$.]/g, '\\$&')).join('[^]*')),
      );
      // not synchronised yet: warnings now, judged again by the clock step
      const loaded = await loadSiteConfig(folder, wrong, true);
      expect([...new Set(loaded.deferred!.map((f) => f.path))].sort()).toEqual(fields);
      expect(loaded.findings.filter((f) => f.severity === 'error')).toEqual([]);
      const judged = (now: Date) =>
        decideClock({ now, bound: undefined, sync: 'synchronised', waited: true, deferred: loaded.deferred! });
      expect(judged(new Date())).toMatchObject({ verdict: 'trusted' });
      expect(judged(wrong)).toMatchObject({
        verdict: 'refuse',
        reason: expect.stringContaining('$.spec.access.clientCAFile'),
      });
    },
  );
});
