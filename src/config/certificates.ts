/**
 * Certificate checks, at the time passed in: a certificate with its key, a bundle of CA
 * certificates, a trust bundle. Each names what is wrong, never the key's text.
 */
import { createPrivateKey, type KeyObject, type X509Certificate } from 'node:crypto';
import type { Finding } from '../base/findings.js';
import { certWindow, describeCert, notCaReason } from '../certs/chain.js';
import { outsideWindow } from '../base/true-time.js';
import { certificatesIn, pemBlockTypes } from '../base/pem.js';
import type { CertificatePair } from './site.js';

/**
 * Why `key` is not the key of the file's first certificate: said as the mistake it usually is, a
 * file in the wrong order (the root first, the issuing CA's key), when the key is a later one's.
 */
function keyMismatch(certs: readonly X509Certificate[], key: KeyObject): { order: boolean; message: string } {
  const first = describeCert(certs[0]!);
  const owner = certs.findIndex((c) => c.checkPrivateKey(key));
  if (owner > 0)
    return {
      order: true,
      message: `the key is the key of certificate ${owner + 1} (${describeCert(certs[owner]!)}), not of the first (${first}): the file must begin with the certificate of this key: put ${describeCert(certs[owner]!)} first, then each certificate's issuer up to the root`,
    };
  return {
    order: false,
    message: `the private key does not belong to ${first}, nor to any certificate of the file: give the key of ${first}`,
  };
}

/**
 * A certificate with its key. `judgeTime` false: the caller judges the validity of every
 * certificate of the file itself (a CA file), so the first one's is not reported twice.
 */
export function checkPair(
  now: Date,
  pair: CertificatePair,
  certPath: string,
  keyPath: string,
  findings: Finding[],
  judgeTime = true,
): CertificatePair | undefined {
  let certs: X509Certificate[];
  try {
    certs = certificatesIn(pair.certPem);
  } catch {
    certs = [];
  }
  const cert = certs[0];
  if (!cert) {
    findings.push({ severity: 'error', path: certPath, message: 'not a PEM certificate' });
    return undefined;
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(pair.keyPem);
  } catch {
    findings.push({ severity: 'error', path: keyPath, message: 'not a PEM private key' });
    return undefined;
  }
  if (!cert.checkPrivateKey(key)) {
    const { order, message } = keyMismatch(certs, key);
    // a file in the wrong order is the certificate file's fault, a stranger's key the key file's
    findings.push({ severity: 'error', path: order ? certPath : keyPath, message });
    return undefined;
  }
  if (!judgeTime) return pair;
  // a window the clock is outside of, either way: the clock's call once chronyd synchronised it
  const window = certWindow(cert);
  const outside = outsideWindow(window, now);
  if (outside) findings.push({ severity: 'error', path: certPath, message: `certificate ${outside}`, window });
  return pair;
}

/**
 * Why PEM text is not a bundle of CA certificates valid now (with the window of a CA outside it:
 * a problem of time alone), or undefined.
 */
export function caBundleProblem(now: Date, pem: string): Pick<Finding, 'message' | 'window'> | undefined {
  let certs: X509Certificate[];
  try {
    certs = certificatesIn(pem);
  } catch {
    return { message: 'not PEM certificates' };
  }
  if (certs.length === 0) return { message: 'no PEM certificate in it' };
  // a certificate that is no CA is refused whatever the clock says; then time, which may be deferred
  const notCa = certs.map(notCaReason).find((r) => r !== undefined);
  if (notCa) return { message: notCa };
  for (const cert of certs) {
    const window = certWindow(cert);
    const outside = outsideWindow(window, now);
    if (outside) return { message: `${describeCert(cert)} ${outside}`, window };
  }
  return undefined;
}

/** Why PEM text is not a trust bundle (certificates only, at least one), or undefined when it is. */
export function trustBundleProblem(pem: string): string | undefined {
  let blocks: string[];
  try {
    blocks = pemBlockTypes(pem);
    certificatesIn(pem);
  } catch {
    return 'not PEM certificates';
  }
  // a key pasted into a trust bundle would be published to every namespace: refused, never quoted
  const other = blocks.find((type) => type !== 'CERTIFICATE');
  if (other !== undefined) return `holds a ${other} block: a trust bundle holds certificates only`;
  if (blocks.length === 0) return 'no PEM certificate in it';
  return undefined;
}
