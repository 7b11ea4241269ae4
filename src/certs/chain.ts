/**
 * The check every certificate the agent issues passes before it is written anywhere, and the one
 * the domain step's verify runs on what the cluster serves: with node:crypto's X509Certificate
 * (OpenSSL underneath), each link of leaf -> served intermediates -> the CA's own chain is checked
 * for its issuer name and key identifier, its signature, its validity at the clock given, and the
 * issuer's right to sign certificates (a CA whose keyUsage lacks keyCertSign signs nothing); the
 * leaf for its key usage and names.
 */
import type { X509Certificate } from 'node:crypto';
import type { ValidityWindow } from '../base/findings.js';
import { certificatesIn } from '../base/pem.js';
import { x509 } from './library.js';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/** A CA and the certificates above it (its issuer first), as the site-config's file gives them. */
export interface CaChain {
  cert: X509Certificate;
  chain: X509Certificate[];
}

export type Usage = { server: readonly string[] } | { client: string };

export const describeCert = (cert: X509Certificate): string => cert.subject.replace(/\n/g, ', ');

export const selfSigned = (cert: X509Certificate): boolean => cert.checkIssued(cert) && cert.verify(cert.publicKey);

/** The CA's certificates a served chain carries after the leaf: every one but a self-signed root. */
export const intermediatesOf = (ca: CaChain): X509Certificate[] => [ca.cert, ...ca.chain].filter((c) => !selfSigned(c));

/** A leaf just issued by `ca` (PEM) followed by the intermediates it is served with, as one PEM. */
export const withIntermediates = (leaf: string, ca: CaChain): string =>
  leaf +
  intermediatesOf(ca)
    .map((c) => c.toString())
    .join('');

/** The keyUsage bits (x509.KeyUsageFlags), or undefined when the certificate has no keyUsage. */
export function keyUsageOf(cert: X509Certificate): number | undefined {
  return new x509.X509Certificate(cert.raw).getExtension(x509.KeyUsagesExtension)?.usages;
}

/**
 * Why `cert` may not sign certificates, or undefined when it may. OpenSSL (node:crypto's `ca`)
 * counts a certificate as a CA only with basicConstraints CA:TRUE and, when it has a keyUsage,
 * keyCertSign in it: the two ways to miss are told apart, each with what to do.
 */
export function notCaReason(cert: X509Certificate): string | undefined {
  if (cert.ca) return undefined;
  const parsed = new x509.X509Certificate(cert.raw);
  if (parsed.getExtension(x509.BasicConstraintsExtension)?.ca)
    return `${describeCert(cert)} says CA:TRUE, but its keyUsage lacks keyCertSign, so it may not sign certificates: have it reissued with keyUsage keyCertSign (and cRLSign)`;
  return `${describeCert(cert)} is not a CA certificate (no basicConstraints CA:TRUE): give the CA that issues the certificates, not a certificate it issued`;
}

/** A certificate's validity, as a finding about it carries it. */
export const certWindow = (cert: X509Certificate): ValidityWindow => ({
  notBefore: new Date(cert.validFrom).toISOString(),
  notAfter: new Date(cert.validTo).toISOString(),
});

/** Why `cert` is not valid at `now`, or undefined. */
export function validityProblem(cert: X509Certificate, now: Date): string | undefined {
  if (Date.parse(cert.validFrom) > now.getTime()) return `${describeCert(cert)} is not valid before ${cert.validFrom}`;
  if (Date.parse(cert.validTo) < now.getTime()) return `${describeCert(cert)} expired on ${cert.validTo}`;
  return undefined;
}

/** Why `child` was not issued by `parent`, or undefined when the link holds. */
function linkProblem(child: X509Certificate, parent: X509Certificate): string | undefined {
  const who = `${describeCert(child)} by ${describeCert(parent)}`;
  const notCa = notCaReason(parent);
  if (notCa) return notCa;
  // issuer name and authority key identifier against the parent's subject and subject key identifier
  if (!child.checkIssued(parent)) return `${who}: the issuer name or key identifier does not match`;
  if (!child.verify(parent.publicKey)) return `${who}: the signature does not verify`;
  return undefined;
}

/** The names of `names` the certificate does not serve; a wildcard covers one label: a name under it stands for it. */
export const uncoveredNames = (leaf: X509Certificate, names: readonly string[]): string[] =>
  names.filter((n) => leaf.checkHost(n.startsWith('*.') ? `x${n.slice(1)}` : n, { wildcards: true }) === undefined);

/** Whether `child` was issued and signed by `parent`: the issuer name and key identifier, and the signature. */
export const issuedBy = (child: X509Certificate, parent: X509Certificate): boolean =>
  child.checkIssued(parent) && child.verify(parent.publicKey);

/** Why a leaf may not be used as `usage` says, or undefined. */
export function usageProblem(leaf: X509Certificate, usage: Usage): string | undefined {
  if (leaf.ca)
    return `${describeCert(leaf)} is a CA certificate, not a ${'server' in usage ? 'serving' : 'client'} one`;
  const bits = keyUsageOf(leaf);
  if (bits !== undefined && !(bits & x509.KeyUsageFlags.digitalSignature))
    return `${describeCert(leaf)} has no digitalSignature in its keyUsage`;
  const extended = leaf.keyUsage;
  if ('server' in usage) {
    if (extended && !extended.includes(SERVER_AUTH)) return `${describeCert(leaf)} is not for serverAuth`;
    const uncovered = uncoveredNames(leaf, usage.server);
    if (uncovered.length > 0) return `it does not name ${uncovered.join(', ')}`;
    return undefined;
  }
  if (extended && !extended.includes(CLIENT_AUTH)) return `${describeCert(leaf)} is not for clientAuth`;
  if (!leaf.subject.split('\n').includes(`CN=${usage.client}`))
    return `${describeCert(leaf)} is not for ${usage.client}`;
  return undefined;
}

/**
 * Why a leaf certificate with the chain it is served with (PEM, leaf first) does not verify up to
 * `ca` for `usage` at `now`; undefined when it does. The served chain must carry the CA's
 * intermediates in order (a client without them cannot reach the root); a root after them is allowed.
 */
export function chainProblem(pem: string, ca: CaChain, usage: Usage, now: Date): string | undefined {
  let certs: X509Certificate[];
  try {
    certs = certificatesIn(pem);
  } catch {
    return 'the certificate cannot be read';
  }
  const [leaf, ...served] = certs;
  if (!leaf) return 'no certificate';
  const path = [ca.cert, ...ca.chain];
  const intermediates = intermediatesOf(ca);
  const missing = intermediates.find((c, i) => !served[i]?.raw.equals(c.raw));
  if (missing) return `the served chain lacks ${describeCert(missing)} after the leaf`;
  const foreign = served.slice(intermediates.length).find((s) => !path.some((c) => c.raw.equals(s.raw)));
  if (foreign) return `the served chain holds ${describeCert(foreign)}, which is not the CA's`;
  const links = [leaf, ...path];
  for (const [i, cert] of links.entries()) {
    const problem = validityProblem(cert, now) ?? (links[i + 1] && linkProblem(cert, links[i + 1]!));
    if (problem) return problem;
  }
  return usageProblem(leaf, usage);
}
