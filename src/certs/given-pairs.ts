/**
 * The site's own serving certificates (the API's and the router's), checked when the site-config
 * is read, before anything is written: the cluster serves the file as it is, so it must be what a
 * client at the site verifies. The leaf has a key of a supported type and may serve (not a CA,
 * serverAuth); each certificate of the file after it issued the one before; the chain reaches the
 * site's CAs (its site CA and trust bundle) with every intermediate in the file,
 * since a client is served only what the file holds; and the leaf names the site's hosts when the
 * site-config fixes them (without a clusterName the cluster's name is read by the domain step,
 * which checks the names then). Without any CA of the site the chain must end at a root in the
 * file: a self-signed certificate is its own.
 */
import type { X509Certificate } from 'node:crypto';
import type { Finding } from '../base/findings.js';
import { certificatesIn } from '../base/pem.js';
import { outsideWindow } from '../base/true-time.js';
import { certWindow, describeCert, issuedBy, notCaReason, selfSigned, uncoveredNames, usageProblem } from './chain.js';
import { describeKey, SUPPORTED_KEY_TYPES, supportedKey } from './key-types.js';

export interface GivenPair {
  certPem: string;
  /** the hosts it must serve; undefined when the site-config does not fix them */
  names: readonly string[] | undefined;
}

/** The CAs a given certificate may chain to, and the fields they come from as a refusal names them. */
export interface Anchors {
  certs: readonly X509Certificate[];
  fields: string;
}

/** Why the file's certificates do not lead, link by link, to one of the anchors (or, without any, to a root). */
function chainProblem(certs: readonly X509Certificate[], { certs: anchors, fields }: Anchors): string | undefined {
  for (const [i, cert] of certs.entries()) {
    const next = certs[i + 1];
    if (next && !issuedBy(cert, next))
      return `certificate ${i + 2} (${describeCert(next)}) did not issue certificate ${i + 1} (${describeCert(cert)}): give the certificate first, then each certificate's issuer up to the root`;
  }
  const notCa = certs.slice(1).map(notCaReason).find(Boolean);
  if (notCa) return notCa;
  const last = certs[certs.length - 1]!;
  const held = (c: X509Certificate) => anchors.some((a) => a.raw.equals(c.raw));
  if (anchors.length === 0)
    return selfSigned(last)
      ? undefined
      : `the chain ends at ${describeCert(last)}, issued by ${last.issuer.replace(/\n/g, ', ')}, which the site-config does not give: append the CAs up to the root after the certificate, or give the CA in ${fields}`;
  if (certs.some(held)) return undefined;
  const parent = anchors.find((a) => issuedBy(last, a));
  if (!parent)
    return `it does not chain to the site's CAs (${anchors.map(describeCert).join('; ')}): it was issued by ${last.issuer.replace(/\n/g, ', ')}: give a certificate the site's CA issued, or that CA in ${fields}`;
  if (!selfSigned(parent))
    return `the file lacks the intermediate CA ${describeCert(parent)}, and a client is served only what the file holds: append it (and any CA above it but the root) after the certificate`;
  return undefined;
}

/** Findings on one given pair whose key already matched its certificate; `path` is its certFile field. */
export function givenPairFindings(pair: GivenPair, anchors: Anchors, now: Date, path: string): Finding[] {
  const certs = certificatesIn(pair.certPem);
  const leaf = certs[0]!;
  const error = (message: string): Finding => ({ severity: 'error', path, message });
  const out: Finding[] = [];
  if (!supportedKey(leaf.publicKey))
    out.push(
      error(
        `${describeCert(leaf)} has a key of type ${describeKey(leaf.publicKey)}; supported: ${SUPPORTED_KEY_TYPES}`,
      ),
    );
  const chain = chainProblem(certs, anchors);
  if (chain) out.push(error(chain));
  // a self-signed certificate is its own anchor: a client trusts it as it is, CA or not
  const usage = selfSigned(leaf) ? undefined : usageProblem(leaf, { server: [] });
  if (usage) out.push(error(`${usage}: give a serving certificate`));
  const uncovered = pair.names ? uncoveredNames(leaf, pair.names) : [];
  if (uncovered.length > 0) out.push(error(`${describeCert(leaf)} does not name ${uncovered.join(', ')}`));
  // the CAs of the file: a window the clock is outside of is the clock's call (the leaf's is the pair check's)
  for (const ca of certs.slice(1)) {
    const window = certWindow(ca);
    const outside = outsideWindow(window, now);
    if (outside) out.push({ ...error(`${describeCert(ca)} ${outside}`), window });
  }
  return out;
}

/** The CAs a given certificate may chain to: the site CA's file and the trust bundle, from `fields`. */
export function siteAnchors(
  siteCaPem: string | undefined,
  trustBundlePem: string | undefined,
  fields: string,
): Anchors {
  return { certs: [siteCaPem, trustBundlePem].flatMap((pem) => (pem ? certificatesIn(pem) : [])), fields };
}
