/**
 * The site's own serving certificates, made by openssl as a site's PKI makes them (an RSA 4096
 * root, an RSA 2048 issuing CA, RSA leaves; and an ECDSA P-384 root, a P-256 issuing CA, P-256
 * leaves): a pair that chains to the site CA with its intermediate, serves and names the site's
 * hosts is accepted; one that lacks the intermediate, chains elsewhere, has a key the agent refuses,
 * is not a serving certificate or misses a name is refused when the site-config is read, naming the
 * field, before anything is written.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { certificatesIn } from '../../src/base/pem.js';
import { loadSiteConfig } from '../../src/config/load.js';
import { writeSiteFolder } from '../node/cli.js';
import { intermediateCa, NEW_KEY, openssl, rootCa, type KeyKind, type OpensslCa } from './openssl-cas.js';

const work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-given-pairs-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const API = 'api.sno.store42.example.com';
const APPS = '*.apps.sno.store42.example.com';
const CERT_FIELD = '$.spec.certificates.api.certFile';
/** what a serving certificate's key may be used for: key encipherment only with RSA (RFC 5480) */
const servingUsage = (kind: KeyKind) =>
  kind.startsWith('rsa') ? 'digitalSignature,keyEncipherment' : 'digitalSignature';

const root = rootCa(work, 'site-root', 'rsa4096', [
  'basicConstraints=critical,CA:TRUE',
  'keyUsage=critical,keyCertSign,cRLSign',
  'subjectKeyIdentifier=hash',
]);
const issuing = intermediateCa(work, 'site-issuing', 'rsa2048', root);

/** A serving certificate `openssl x509 -req` signs with `ca` for `san`; `extensions` replace the serving ones. */
function leaf(name: string, ca: OpensslCa, san: string, kind: KeyKind = 'rsa2048', extensions?: string): string {
  const key = path.join(work, `${name}.key`);
  const csr = path.join(work, `${name}.csr`);
  const ext = path.join(work, `${name}.ext`);
  writeFileSync(
    ext,
    extensions ??
      `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,${servingUsage(kind)}\nextendedKeyUsage=serverAuth\nsubjectAltName=${san}\n`,
  );
  openssl(['req', '-new', ...NEW_KEY[kind], '-nodes', '-subj', `/CN=${name}`, '-keyout', key, '-out', csr]);
  const crt = openssl([
    'x509', '-req', '-in', csr, '-CA', ca.crt, '-CAkey', ca.key, '-set_serial', '0x51', '-days', '90', '-sha256',
    '-extfile', ext,
  ]); // prettier-ignore
  writeFileSync(path.join(work, `${name}.crt`), crt);
  return name;
}

/** the issuing CA's own certificate, without the root above it */
const issuingOnly = (ca: OpensslCa = issuing) => certificatesIn(readFileSync(ca.crt, 'utf8'))[0]!.toString();

/**
 * The site-config with `ca` as the site CA and an api pair: `chain` follows the leaf in its file;
 * null: no clusterName.
 */
async function load(name: string, chain: string, clusterName: string | null = 'sno', ca: OpensslCa = issuing) {
  const dir = writeSiteFolder(
    path.join(work, `${name}-site`),
    'store-0042',
    {
      baseDomain: 'store42.example.com',
      ...(clusterName && { clusterName }),
      hostname: 'sno-factory',
      network: { nmstate: { interfaces: [] }, internalIP: '192.168.127.10/24' },
      access: { siteCA: { certFile: 'site-ca.crt', keyFile: 'site-ca.key' } },
      certificates: { api: { certFile: 'api.crt', keyFile: 'api.key' } },
    },
    {
      'site-ca.crt': readFileSync(ca.crt, 'utf8'),
      'site-ca.key': readFileSync(ca.key, 'utf8'),
      'api.crt': readFileSync(path.join(work, `${name}.crt`), 'utf8') + chain,
      'api.key': readFileSync(path.join(work, `${name}.key`), 'utf8'),
    },
  );
  return loadSiteConfig(dir, new Date()).then(
    (loaded) => loaded.findings.filter((f) => f.severity === 'error').map((f) => `${f.path}: ${f.message}`),
    (err: Error) => err.message,
  );
}

describe("the site's own serving certificates, against the site CA", () => {
  it('a certificate the issuing CA signed, served with its intermediate, for the API name: accepted', async () => {
    expect(await load(leaf('good', issuing, `DNS:${API}`), issuingOnly())).toEqual([]);
  });

  it('the same without the intermediate in the file: refused, naming the intermediate to append', async () => {
    expect(await load(leaf('no-intermediate', issuing, `DNS:${API}`), '')).toContain(
      `${CERT_FIELD}: the file lacks the intermediate CA O=Store Corp, CN=site-issuing, and a client is served only what the file holds: append it (and any CA above it but the root) after the certificate`,
    );
  });

  it("one another CA signed: refused, naming the site's CAs and the issuer", async () => {
    const other = rootCa(path.join(work, 'other'), 'other-root', 'rsa2048');
    expect(await load(leaf('elsewhere', other, `DNS:${API}`), '')).toContain(
      `${CERT_FIELD}: it does not chain to the site's CAs (O=Store Corp, CN=site-issuing; O=Store Corp, CN=site-root): it was issued by O=Store Corp, CN=other-root: give a certificate the site's CA issued, or that CA in spec.access.siteCA or spec.trustBundle`,
    );
  });

  it('an RSA 1024 key: refused with the supported types', async () => {
    expect(await load(leaf('weak', issuing, `DNS:${API}`, 'rsa1024'), issuingOnly())).toContain(
      `${CERT_FIELD}: CN=weak has a key of type RSA 1024; supported: RSA 2048, 3072 or 4096, or ECDSA P-256 or P-384`,
    );
  });

  it('a client certificate: refused as not for serverAuth', async () => {
    const client = leaf('client', issuing, '', 'rsa2048', 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n');
    expect(await load(client, issuingOnly())).toContain(
      `${CERT_FIELD}: CN=client is not for serverAuth: give a serving certificate`,
    );
  });

  it("one for the apps wildcard given as the API's: refused naming the API host; without a clusterName left to the domain step", async () => {
    const apps = leaf('apps-for-api', issuing, `DNS:${APPS}`);
    expect(await load(apps, issuingOnly())).toContain(`${CERT_FIELD}: CN=apps-for-api does not name ${API}`);
    expect(await load(apps, issuingOnly(), null)).toEqual([]);
  });
});

describe('the same from an ECDSA PKI: a P-384 root and a P-256 issuing CA, as openssl makes them', () => {
  const ecRoot = rootCa(path.join(work, 'ec'), 'ec-root', 'p384', [
    'basicConstraints=critical,CA:TRUE',
    'keyUsage=critical,keyCertSign,cRLSign',
    'subjectKeyIdentifier=hash',
  ]);
  const ecIssuing = intermediateCa(path.join(work, 'ec'), 'ec-issuing', 'p256', ecRoot);

  it('a P-256 certificate the issuing CA signed, served with its intermediate: accepted', async () => {
    const good = leaf('ec-good', ecIssuing, `DNS:${API}`, 'p256');
    expect(await load(good, issuingOnly(ecIssuing), 'sno', ecIssuing)).toEqual([]);
  });

  it('the same without the intermediate: refused, naming the intermediate to append', async () => {
    const bare = leaf('ec-bare', ecIssuing, `DNS:${API}`, 'p256');
    expect(await load(bare, '', 'sno', ecIssuing)).toContain(
      `${CERT_FIELD}: the file lacks the intermediate CA O=Store Corp, CN=ec-issuing, and a client is served only what the file holds: append it (and any CA above it but the root) after the certificate`,
    );
  });

  it('a P-521 key: refused with the supported types', async () => {
    const p521 = leaf('ec-p521', ecIssuing, `DNS:${API}`, 'p521');
    expect(await load(p521, issuingOnly(ecIssuing), 'sno', ecIssuing)).toContain(
      `${CERT_FIELD}: CN=ec-p521 has a key of type ECDSA P-521; supported: RSA 2048, 3072 or 4096, or ECDSA P-256 or P-384`,
    );
  });

  it('an RSA certificate the ECDSA issuing CA signed chains to it: accepted', async () => {
    const mixed = leaf('ec-signed-rsa', ecIssuing, `DNS:${API}`, 'rsa2048');
    expect(await load(mixed, issuingOnly(ecIssuing), 'sno', ecIssuing)).toEqual([]);
  });
});
