/**
 * The installer's signers as issuers of the domain step's certificates. The media holds only their
 * private keys and (for the ingress signer) its subject CN, never their certificates: those are in
 * the installer's kubeconfig CA bundle, at the hub. A certificate verifies against such a CA when
 * its issuer name is the CA's subject as the CA encodes it, its authority key identifier is the
 * CA's subject key identifier, and the CA's key signed it. So each signer becomes an issuer through
 * a stand-in certificate: self-signed by the signer's key, with the installer's subject encoded as
 * Go's crypto/x509/pkix encodes it (OU before CN, PrintableString when every character allows it,
 * else UTF8String: @peculiar/x509's rule too) and the key identifier the installer computes (SHA-1
 * of the public key's bits, RFC 5280 method 1). The stand-in is self-signed, so it is never served
 * in a chain; it lives in memory only.
 */
import { createHash, createPublicKey, webcrypto, type KeyObject } from 'node:crypto';
import { x509 } from '../../certs/library.js';
import { parseKey, supportedKey } from '../../certs/key-types.js';
import { certificatesIn } from '../../base/pem.js';
import type { SiteCa } from '../../certs/site-certs.js';
import type { Site } from '../site.js';
import type { InstallerSigner } from './image-based.js';

const HOUR_MS = 3_600_000;
const STAND_IN_DAYS = 3650;

/** The WebCrypto algorithm a key signs with: PKCS#1 v1.5 SHA-256 for RSA, ECDSA with its curve's hash. */
function algorithmOf(key: KeyObject): webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams {
  const type = supportedKey(key);
  if (!type) throw new Error('unsupported signer key type');
  return type.kind === 'rsa'
    ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
    : { name: 'ECDSA', namedCurve: type.curve };
}

/** An issuer for `signer`: its key, and a stand-in certificate carrying the installer's subject. */
export async function installerIssuer(signer: InstallerSigner, now: Date): Promise<SiteCa> {
  const key = parseKey(signer.keyPem);
  const algorithm = algorithmOf(key);
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const keys = {
    privateKey: await webcrypto.subtle.importKey(
      'pkcs8',
      key.export({ type: 'pkcs8', format: 'der' }),
      algorithm,
      false,
      ['sign'],
    ),
    publicKey: await webcrypto.subtle.importKey('spki', spki, algorithm, true, ['verify']),
  };
  const { commonName, organizationalUnit } = signer.subject;
  const usage = x509.KeyUsageFlags;
  const standIn = await x509.X509CertificateGenerator.createSelfSigned({
    name: new x509.Name([...(organizationalUnit ? [{ OU: [organizationalUnit] }] : []), { CN: [commonName] }]),
    keys,
    signingAlgorithm:
      algorithm.name === 'ECDSA'
        ? {
            name: 'ECDSA',
            hash: (algorithm as webcrypto.EcKeyImportParams).namedCurve === 'P-384' ? 'SHA-384' : 'SHA-256',
          }
        : algorithm,
    notBefore: new Date(now.getTime() - HOUR_MS),
    notAfter: new Date(now.getTime() + STAND_IN_DAYS * 24 * HOUR_MS),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(usage.keyCertSign | usage.digitalSignature | usage.keyEncipherment, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const certPem = `${standIn.toString('pem')}\n`;
  return { cert: certificatesIn(certPem)[0]!, key, chain: [], certPem };
}

/** The issuers image-based media gives the domain step: the API's and the apps domain's. */
export async function installerIssuers(site: Site, now: Date): Promise<{ api?: SiteCa; apps?: SiteCa }> {
  const { apiSigner, ingressSigner } = site.imageBased ?? {};
  return {
    ...(apiSigner && { api: await installerIssuer(apiSigner, now) }),
    ...(ingressSigner && { apps: await installerIssuer(ingressSigner, now) }),
  };
}

/** What a rerun compares of the signers: their subjects and public key fingerprints, never the keys. */
export function installerSignersInput(site: Site): unknown {
  const fingerprint = (s: InstallerSigner | undefined) =>
    s && {
      subject: s.subject,
      spki: createHash('sha256')
        .update(createPublicKey(s.keyPem).export({ type: 'spki', format: 'der' }))
        .digest('hex'),
    };
  return {
    api: fingerprint(site.imageBased?.apiSigner) ?? null,
    apps: fingerprint(site.imageBased?.ingressSigner) ?? null,
  };
}
