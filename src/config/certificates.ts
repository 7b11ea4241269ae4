/**
 * Certificate checks, at the time passed in: a certificate with its key, a bundle of CA
 * certificates, a trust bundle. Each names what is wrong, never the key's text.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { Finding } from '../base/findings.js';
import { certWindow } from '../certs/chain.js';
import { outsideWindow } from '../base/true-time.js';
import { certificatesIn, pemBlockTypes } from '../base/pem.js';
import type { CertificatePair } from './site.js';

export function checkPair(
  now: Date,
  pair: CertificatePair,
  certPath: string,
  keyPath: string,
  findings: Finding[],
): CertificatePair | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.certPem);
  } catch {
    findings.push({ severity: 'error', path: certPath, message: 'not a PEM certificate' });
    return undefined;
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(pair.keyPem))) {
      findings.push({ severity: 'error', path: keyPath, message: 'private key does not match the certificate' });
      return undefined;
    }
  } catch {
    findings.push({ severity: 'error', path: keyPath, message: 'not a PEM private key' });
    return undefined;
  }
  // a window the clock is outside of, either way: the clock's call once chronyd synchronised it
  const window = certWindow(cert);
  const outside = outsideWindow(window, now);
  if (outside) findings.push({ severity: 'error', path: certPath, message: `certificate ${outside}`, window });
  return pair;
}

/** Why PEM text is not a bundle of CA certificates valid now (with the window of a CA outside it), or undefined. */
export function caBundleProblem(now: Date, pem: string): Pick<Finding, 'message' | 'window'> | undefined {
  let certs: X509Certificate[];
  try {
    certs = certificatesIn(pem);
  } catch {
    return { message: 'not PEM certificates' };
  }
  if (certs.length === 0) return { message: 'no PEM certificate in it' };
  for (const cert of certs) {
    if (!cert.ca) return { message: `${cert.subject.replace(/\n/g, ', ')} is not a CA certificate` };
    const window = certWindow(cert);
    const outside = outsideWindow(window, now);
    if (outside) return { message: `${cert.subject.replace(/\n/g, ', ')} ${outside}`, window };
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
