/**
 * Certificates issued with @peculiar/x509 (a maintained X.509 library over WebCrypto), signed by
 * node:crypto's WebCrypto. The agent's own keys are ECDSA P-256; an issuer's key is whatever the
 * site's CA has among the supported types (key-types.ts): RSA signs PKCS#1 v1.5 with SHA-256, ECDSA
 * with the hash of its curve's size (SHA-256 for P-256, SHA-384 for P-384), as Go's crypto/x509
 * and openssl do. The issuer name is the issuer certificate's subject as encoded there, and the
 * authorityKeyIdentifier is the issuer's subjectKeyIdentifier when it has one. The library hashes
 * (key identifiers) with its default provider, Node's global WebCrypto: the same node:crypto.
 */
import {
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  webcrypto,
  type KeyObject,
  type X509Certificate,
} from 'node:crypto';
import { describeKey, SUPPORTED_KEY_TYPES, supportedKey } from './key-types.js';
import { x509 } from './library.js';

const DAY_MS = 86_400_000;

export interface Issuer {
  /** the issuing CA */
  cert: X509Certificate;
  key: KeyObject;
  /** the CAs above it, its issuer first, up to the root when the file gives it */
  chain: X509Certificate[];
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

/** A new P-256 private key: the agent's own keys are never of another type. */
export const newKey = (): KeyObject => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;

export const keyToPem = (key: KeyObject): string => key.export({ type: 'pkcs8', format: 'pem' }).toString();

/** The key as WebCrypto signs with it, and the algorithm: PKCS#1 v1.5 SHA-256 for RSA, ECDSA with its curve's hash. */
async function signer(
  key: KeyObject,
): Promise<{ key: webcrypto.CryptoKey; algorithm: webcrypto.RsaHashedImportParams | webcrypto.EcdsaParams }> {
  const type = supportedKey(key);
  if (!type)
    throw new Error(
      `a key of type ${describeKey(key)} cannot sign certificates here; supported: ${SUPPORTED_KEY_TYPES}`,
    );
  const der = key.export({ type: 'pkcs8', format: 'der' });
  if (type.kind === 'rsa') {
    const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    return { key: await webcrypto.subtle.importKey('pkcs8', der, algorithm, false, ['sign']), algorithm };
  }
  const imported = await webcrypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: type.curve }, false, [
    'sign',
  ]);
  return { key: imported, algorithm: { name: 'ECDSA', hash: type.curve === 'P-384' ? 'SHA-384' : 'SHA-256' } };
}

function ownExtensions(req: CertificateRequest): x509.Extension[] {
  const usage = x509.KeyUsageFlags;
  if (req.isCA)
    return [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(usage.keyCertSign | usage.cRLSign | usage.digitalSignature, true),
    ];
  return [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(usage.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([
      req.client ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth,
    ]),
    ...(req.client
      ? []
      : [
          new x509.SubjectAlternativeNameExtension(
            (req.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
          ),
        ]),
  ];
}

/**
 * Issues a certificate for `key` (self-signed when no issuer is given) and returns it as PEM.
 * Serving certificates carry their names as subjectAltName, which is all TLS clients check.
 */
export async function issue(req: CertificateRequest, key: KeyObject, issuer?: Issuer): Promise<string> {
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const sign = await signer(issuer ? issuer.key : key);
  const subject = new x509.Name([...(req.organizations ?? []).map((o) => ({ O: [o] })), { CN: [req.commonName] }]);
  const issuerCert = issuer && new x509.X509Certificate(issuer.cert.raw);
  const subjectKeyId = await x509.SubjectKeyIdentifierExtension.create(new x509.PublicKey(spki));
  // RFC 5280 4.2.1.1: the issuer's own identifier, as verifiers match it; a self-signed certificate names itself
  const issuerKeyId = issuerCert
    ? issuerCert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId
    : subjectKeyId.keyId;
  // positive 128-bit serial: the high bit cleared so DER does not read it as negative, the next kept
  // set so the encoding keeps its 16 bytes
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString('hex'),
    subject,
    // the issuer's subject as its certificate encodes it, not a name re-typed from its text
    issuer: issuerCert ? issuerCert.subjectName : subject,
    notBefore: req.notBefore,
    notAfter: new Date(req.notBefore.getTime() + req.validityDays * DAY_MS),
    publicKey: spki,
    signingKey: sign.key,
    signingAlgorithm: sign.algorithm,
    extensions: [
      ...ownExtensions(req),
      subjectKeyId,
      ...(issuerKeyId ? [new x509.AuthorityKeyIdentifierExtension(issuerKeyId)] : []),
    ],
  });
  return `${cert.toString('pem')}\n`;
}
