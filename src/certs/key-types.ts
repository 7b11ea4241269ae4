/**
 * The key types a site's CA may have: what organisations make their CAs with. RSA 2048, 3072 and
 * 4096 bits, and ECDSA on P-256 and P-384. Any other key (RSA 1024, P-521, Ed25519, ...) is refused
 * when the site-config is read, before anything is signed with it.
 */
import { createPrivateKey, type KeyObject, type X509Certificate } from 'node:crypto';

export type SupportedKey = { kind: 'rsa'; bits: 2048 | 3072 | 4096 } | { kind: 'ec'; curve: 'P-256' | 'P-384' };

const RSA_BITS = [2048, 3072, 4096] as const;
/** node:crypto names the curves by their OpenSSL names; people and the supported list by NIST's */
const NIST_NAMES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' };
const CURVES: Record<string, 'P-256' | 'P-384'> = { prime256v1: 'P-256', secp384r1: 'P-384' };

export const SUPPORTED_KEY_TYPES = 'RSA 2048, 3072 or 4096, or ECDSA P-256 or P-384';

/** The key's type when it is one a site CA may have; undefined otherwise. Works on public and private keys. */
export function supportedKey(key: KeyObject): SupportedKey | undefined {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    const bits = RSA_BITS.find((b) => b === details.modulusLength);
    return bits && { kind: 'rsa', bits };
  }
  if (key.asymmetricKeyType === 'ec') {
    const curve = details.namedCurve === undefined ? undefined : CURVES[details.namedCurve];
    return curve && { kind: 'ec', curve };
  }
  return undefined;
}

/** "RSA 1024", "ECDSA P-521", "ed25519": how a refusal names a key, in the words of SUPPORTED_KEY_TYPES. */
export function describeKey(key: KeyObject): string {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') return `RSA ${details.modulusLength ?? '?'}`;
  if (key.asymmetricKeyType === 'ec') {
    const curve = details.namedCurve ?? '?';
    return `ECDSA ${NIST_NAMES[curve] ?? curve}`;
  }
  return key.asymmetricKeyType ?? 'unknown';
}

export const parseKey = (pem: string): KeyObject => createPrivateKey(pem);

/** Whether `cert` is for `key`. */
export const matchesKey = (cert: X509Certificate, key: KeyObject): boolean => cert.checkPrivateKey(key);
