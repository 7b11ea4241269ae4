/**
 * Certificates for the site: ECDSA P-256 keys and signatures from node:crypto, the certificate
 * structure from node-forge's X.509 encoders (names, validity, extensions, DER).
 *
 * Why not node-forge alone: it signs RSA in pure JavaScript (~130 ms a signature here) and makes
 * RSA-2048 keys through native crypto at 100-400 ms each (more under load), so a site CA and four
 * serving certificates take 1-3 s. node:crypto makes a P-256 key in well under a millisecond and
 * signs in a fraction of one, so the whole set takes milliseconds (bench/cluster.ts measures all
 * three). node-forge's certificate assembler only knows RSA keys and RSA signatures, so the two
 * outer SEQUENCEs (TBSCertificate, Certificate) are put together here from forge's own encoders,
 * with the public key as node:crypto exports it (SubjectPublicKeyInfo DER).
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import forge from 'node-forge';

const { asn1, pki } = forge;
// exported by node-forge's x509 module, missing from its type declarations
const extensionsToAsn1 = (pki as unknown as { certificateExtensionsToAsn1(exts: unknown[]): forge.asn1.Asn1 })
  .certificateExtensionsToAsn1;
const ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const DAY_MS = 86_400_000;

export interface Issuer {
  cert: X509Certificate;
  key: KeyObject;
}

export interface CertificateRequest {
  commonName: string;
  dnsNames?: string[];
  isCA?: boolean;
  /** subject O= values: Kubernetes reads them as the groups of a client certificate's user */
  organizations?: string[];
  /** a client certificate (extKeyUsage clientAuth) instead of a serving one */
  client?: boolean;
  notBefore: Date;
  validityDays: number;
}

const der = (node: forge.asn1.Asn1): string => asn1.toDer(node).getBytes();

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey BIT STRING's bits. */
function keyIdentifier(publicKey: KeyObject): string {
  const spki = asn1.fromDer(publicKey.export({ type: 'spki', format: 'der' }).toString('binary'));
  const bits = (spki.value as forge.asn1.Asn1[])[1]!.value as string;
  // a BIT STRING's first byte counts its unused bits
  return createHash('sha1')
    .update(Buffer.from(bits.slice(1), 'binary'))
    .digest('binary');
}

/** The issuer's subject exactly as encoded in its certificate (forge cannot parse an EC certificate). */
function subjectName(cert: X509Certificate): forge.asn1.Asn1 {
  const certificate = asn1.fromDer(cert.raw.toString('binary'));
  const tbs = (certificate.value as forge.asn1.Asn1[])[0]!;
  return (tbs.value as forge.asn1.Asn1[])[5]!;
}

const algorithm = () =>
  asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(ECDSA_WITH_SHA256).getBytes()),
  ]);

const time = (date: Date) =>
  date.getUTCFullYear() < 2050
    ? asn1.create(asn1.Class.UNIVERSAL, asn1.Type.UTCTIME, false, asn1.dateToUtcTime(date))
    : asn1.create(asn1.Class.UNIVERSAL, asn1.Type.GENERALIZEDTIME, false, asn1.dateToGeneralizedTime(date));

function extensions(req: CertificateRequest, subjectKey: KeyObject, issuerKey: KeyObject): object[] {
  const octets = (bytes: string) => asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OCTETSTRING, false, bytes);
  const common = [
    { name: 'subjectKeyIdentifier', value: octets(keyIdentifier(subjectKey)) },
    {
      name: 'authorityKeyIdentifier',
      value: asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
        asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, false, keyIdentifier(issuerKey)),
      ]),
    },
  ];
  if (req.isCA) {
    return [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      ...common,
    ];
  }
  return [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, critical: true },
    ...(req.client
      ? [{ name: 'extKeyUsage', clientAuth: true }]
      : [
          { name: 'extKeyUsage', serverAuth: true },
          { name: 'subjectAltName', altNames: (req.dnsNames ?? []).map((value) => ({ type: 2, value })) },
        ]),
    ...common,
  ];
}

/** A new P-256 private key. */
export const newKey = (): KeyObject => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;

export const keyToPem = (key: KeyObject): string => key.export({ type: 'pkcs8', format: 'pem' }).toString();

/**
 * Issues a certificate for `key` (self-signed when no issuer is given). Serving certificates carry
 * their names as subjectAltName, which is all TLS clients check.
 */
export function issue(req: CertificateRequest, key: KeyObject, issuer?: Issuer): string {
  const publicKey = createPublicKey(key);
  const shell = pki.createCertificate();
  const subject = [
    ...(req.organizations ?? []).map((value) => ({ name: 'organizationName', value })),
    { name: 'commonName', value: req.commonName },
  ];
  shell.setSubject(subject);
  shell.setExtensions(extensions(req, publicKey, issuer ? issuer.cert.publicKey : publicKey));
  // positive 128-bit serial: the high bit cleared so DER does not read it as negative
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  const notAfter = new Date(req.notBefore.getTime() + req.validityDays * DAY_MS);
  const tbs = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, [
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.INTEGER, false, asn1.integerToDer(2).getBytes()),
    ]),
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.INTEGER, false, serial.toString('binary')),
    algorithm(),
    issuer ? subjectName(issuer.cert) : pki.distinguishedNameToAsn1(shell.subject),
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [time(req.notBefore), time(notAfter)]),
    pki.distinguishedNameToAsn1(shell.subject),
    asn1.fromDer(publicKey.export({ type: 'spki', format: 'der' }).toString('binary')),
    extensionsToAsn1(shell.extensions as unknown[]),
  ]);
  const tbsDer = der(tbs);
  const signature = sign('sha256', Buffer.from(tbsDer, 'binary'), issuer ? issuer.key : key);
  const certificate = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    tbs,
    algorithm(),
    asn1.create(
      asn1.Class.UNIVERSAL,
      asn1.Type.BITSTRING,
      false,
      String.fromCharCode(0) + signature.toString('binary'),
    ),
  ]);
  return forge.pem.encode({ type: 'CERTIFICATE', body: der(certificate) });
}

export const parseKey = (pem: string): KeyObject => createPrivateKey(pem);

/** Whether `cert` is for `key`. */
export const matchesKey = (cert: X509Certificate, key: KeyObject): boolean => cert.checkPrivateKey(key);

/** Valid now and for at least `marginDays` more. */
export const validFor = (cert: X509Certificate, now: Date, marginDays: number): boolean =>
  new Date(cert.validFrom).getTime() <= now.getTime() &&
  new Date(cert.validTo).getTime() > now.getTime() + marginDays * DAY_MS;
