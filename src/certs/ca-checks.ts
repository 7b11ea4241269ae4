/**
 * The checks a site's CAs pass when the site-config is read, before anything is signed with them
 * or installed: the admin client CA (a bundle of CA certificates) and the site CA (the issuing CA,
 * then the CAs above it up to the root, and its key). Each finding names the field the caller gives.
 * The loader has already made sure each certificate is a CA (for OpenSSL that includes keyCertSign
 * when there is a keyUsage) valid at its clock and that the site CA's key is the first
 * certificate's; these add the key types the agent signs with and a chain in which each
 * certificate is issued by the next.
 */
import { createPrivateKey, type X509Certificate } from 'node:crypto';
import { certificatesIn } from '../base/pem.js';
import type { Finding } from '../base/findings.js';
import { describeCert, selfSigned } from './chain.js';
import type { PemPair } from './site-certs.js';
import { describeKey, SUPPORTED_KEY_TYPES, supportedKey } from './key-types.js';

/** The fields the CAs came from, as findings name them. */
export interface AccessCaFields {
  clientCa: string;
  siteCaCert: string;
  siteCaKey: string;
}

const error = (path: string, message: string): Finding => ({ severity: 'error', path, message });

/**
 * What each certificate of a CA file must be beyond a CA valid now (the loader's check, which
 * reports its validity once): of a supported key type.
 */
function caCertFindings(path: string, certs: readonly X509Certificate[]): Finding[] {
  return certs.flatMap((cert) => {
    const key = cert.publicKey;
    return supportedKey(key)
      ? []
      : [error(path, `${describeCert(cert)} has a key of type ${describeKey(key)}; supported: ${SUPPORTED_KEY_TYPES}`)];
  });
}

function siteCaFindings(pair: PemPair, fields: AccessCaFields): Finding[] {
  const certs = certificatesIn(pair.certPem);
  const out = caCertFindings(fields.siteCaCert, certs);
  const key = createPrivateKey(pair.keyPem);
  if (!supportedKey(key))
    out.push(error(fields.siteCaKey, `a key of type ${describeKey(key)}; supported: ${SUPPORTED_KEY_TYPES}`));
  // the issuing CA first, then each certificate's issuer: what a TLS client is served after the leaf
  for (const [i, cert] of certs.entries()) {
    const next = certs[i + 1];
    if (next && !(cert.checkIssued(next) && cert.verify(next.publicKey)))
      out.push(
        error(
          fields.siteCaCert,
          `certificate ${i + 2} (${describeCert(next)}) did not issue certificate ${i + 1} (${describeCert(cert)}): give the issuing CA first, then its chain up to the root`,
        ),
      );
    if (!next && !selfSigned(cert) && i > 0)
      out.push({
        severity: 'warning',
        path: fields.siteCaCert,
        message: `the chain ends at ${describeCert(cert)}, not at a root: clients must trust it or its issuer`,
      });
  }
  return out;
}

/** Findings on the CAs the site-config gives, read by the loader (`access` holds only those that passed its checks). */
export function accessCaFindings(
  access: { clientCaPem?: string; siteCa?: PemPair },
  fields: AccessCaFields,
): Finding[] {
  return [
    ...(access.clientCaPem ? caCertFindings(fields.clientCa, certificatesIn(access.clientCaPem)) : []),
    ...(access.siteCa ? siteCaFindings(access.siteCa, fields) : []),
  ];
}
