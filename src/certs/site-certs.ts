/**
 * The site CA and the serving certificates it signs. The CA's key lives in the state folder (0600)
 * so that a rerun, or a second pass after a power cut, signs with the same CA instead of minting a
 * new one the technician's browsers would have to learn again. Serving keys never touch the disk:
 * they go straight into TLS secrets.
 */
import type { X509Certificate } from 'node:crypto';
import path from 'node:path';
import { certificatesIn } from '../base/pem.js';
import { StepError } from '../base/errors.js';
import type { RootFs } from '../ports/fs.js';
import { chainProblem, describeCert, withIntermediates } from './chain.js';
import { issue, keyToPem, newKey, type Issuer } from './issue.js';
import { matchesKey, parseKey } from './key-types.js';

/** a certificate (leaf first, then its chain) and its key, as PEM */
export interface PemPair {
  certPem: string;
  keyPem: string;
}

export const SITE_CA_DIR = 'site-ca';
const CA_VALIDITY_DAYS = 3650;
/** shorter than the CA: a node at a store is rarely touched, so the certificates outlive a few upgrades */
const SERVING_VALIDITY_DAYS = 825;
/** a certificate that expires sooner than this is issued again */
export const RENEW_MARGIN_DAYS = 30;
/** clocks of freshly installed machines run behind; backdating keeps the certificate valid for them */
const BACKDATE_MS = 60 * 60_000;
const DAY_MS = 86_400_000;

export interface SiteCa extends Issuer {
  certPem: string;
}

export const caPaths = (stateDir: string) => ({
  cert: path.join(stateDir, SITE_CA_DIR, 'ca.crt'),
  key: path.join(stateDir, SITE_CA_DIR, 'ca.key'),
});

/** The site CA's certificate (PEM) in the state folder, for `status`: what a kubeconfig at the site must trust. */
export async function siteCaCertificate(fs: RootFs, stateDir: string): Promise<string | undefined> {
  return fs.readText(caPaths(stateDir).cert);
}

/** The site CA kept in the state folder; undefined when there is none yet (or it is unreadable or expiring). */
export async function loadSiteCa(fs: RootFs, stateDir: string, now: Date): Promise<SiteCa | undefined> {
  const paths = caPaths(stateDir);
  const [certPem, keyPem] = await Promise.all([fs.readText(paths.cert), fs.readText(paths.key)]);
  if (!certPem || !keyPem) return undefined;
  try {
    const cert = certificatesIn(certPem)[0];
    const key = parseKey(keyPem);
    if (!cert || !matchesKey(cert, key) || !validFor(cert, now, RENEW_MARGIN_DAYS)) return undefined;
    return { cert, key, chain: [], certPem };
  } catch {
    return undefined;
  }
}

/**
 * A site CA the site gives: the issuing CA, then its chain. The loader checked its key type, that
 * it matches its key, and that each certificate issued the one before.
 */
export function siteCaGiven(given: PemPair | undefined): SiteCa | undefined {
  if (!given) return undefined;
  const [cert, ...chain] = certificatesIn(given.certPem);
  return { cert: cert!, key: parseKey(given.keyPem), chain, certPem: given.certPem };
}

/** The kept site CA, or a new one written to the state folder (key 0600) first. */
export async function ensureSiteCa(fs: RootFs, stateDir: string, siteName: string, now: Date): Promise<SiteCa> {
  const kept = await loadSiteCa(fs, stateDir, now);
  if (kept) return kept;
  const key = newKey();
  const certPem = await issue(
    {
      commonName: `sno-relocate site CA ${siteName}`,
      isCA: true,
      notBefore: new Date(now.getTime() - BACKDATE_MS),
      validityDays: CA_VALIDITY_DAYS,
    },
    key,
  );
  const paths = caPaths(stateDir);
  await fs.mkdirp(path.dirname(paths.key), 0o700);
  // the key first: a certificate without its key would be unusable after a power cut
  await fs.writeAtomic(paths.key, keyToPem(key), { mode: 0o600 });
  await fs.writeAtomic(paths.cert, certPem, { mode: 0o644 });
  return { cert: certificatesIn(certPem)[0]!, key, chain: [], certPem };
}

/** under this many days left to the issuer's end, issuing under it is said as a warning */
const ISSUER_WARN_DAYS = 90;

/** When the first of the CA and the CAs above it expires: nothing it signs verifies after that. */
const issuerEnd = (ca: Issuer): Date => new Date(Math.min(...[ca.cert, ...ca.chain].map((c) => Date.parse(c.validTo))));

/**
 * The validity a serving certificate issued now gets: SERVING_VALIDITY_DAYS, but never past its
 * issuer's end; `warning` says so when that end is under ISSUER_WARN_DAYS away.
 */
export function servingWindow(ca: Issuer, now: Date): { notBefore: Date; notAfter: Date; warning?: string } {
  const notBefore = new Date(now.getTime() - BACKDATE_MS);
  const end = issuerEnd(ca);
  const notAfter = new Date(Math.min(notBefore.getTime() + SERVING_VALIDITY_DAYS * DAY_MS, end.getTime()));
  const days = Math.floor((end.getTime() - now.getTime()) / DAY_MS);
  if (days >= ISSUER_WARN_DAYS) return { notBefore, notAfter };
  const expiring = [ca.cert, ...ca.chain].find((c) => Date.parse(c.validTo) === end.getTime())!;
  return {
    notBefore,
    notAfter,
    warning: `${describeCert(expiring)} expires on ${end.toISOString()}, in ${days} days: the serving certificates it signs end then too; renew the site's CA and run the relocation again before then`,
  };
}

/**
 * A serving certificate for `names` (the first is the subject), followed by the CA's intermediates,
 * valid for servingWindow. It is checked against the CA's chain before anyone sees it: one that
 * does not verify is refused.
 */
export async function issueServing(names: readonly string[], ca: SiteCa, now: Date): Promise<PemPair> {
  const key = newKey();
  const { notBefore, notAfter } = servingWindow(ca, now);
  const leaf = await issue(
    {
      commonName: names[0]!,
      dnsNames: [...names],
      notBefore,
      validityDays: (notAfter.getTime() - notBefore.getTime()) / DAY_MS,
    },
    key,
    ca,
  );
  const certPem = withIntermediates(leaf, ca);
  const problem = chainProblem(certPem, ca, { server: names }, now);
  if (problem)
    throw new StepError(`the certificate for ${names.join(', ')} does not verify against the site CA: ${problem}`);
  return { certPem, keyPem: keyToPem(key) };
}

/** Valid now and for at least `marginDays` more. */
const validFor = (cert: X509Certificate, now: Date, marginDays: number): boolean =>
  Date.parse(cert.validFrom) <= now.getTime() && Date.parse(cert.validTo) > now.getTime() + marginDays * DAY_MS;

/**
 * Why a certificate and key pair does not serve `names` signed by `ca`, or undefined when it does:
 * it must be readable, match its key, verify up to the CA with the intermediates served after it,
 * name every one of `names` and stay valid.
 */
export function servingProblem(
  pair: PemPair,
  names: readonly string[],
  ca: SiteCa | undefined,
  now: Date,
): string | undefined {
  let leaf: X509Certificate | undefined;
  try {
    leaf = certificatesIn(pair.certPem)[0];
    if (leaf && !matchesKey(leaf, parseKey(pair.keyPem))) return 'the key does not match the certificate';
  } catch {
    return 'the certificate or key cannot be read';
  }
  if (!leaf) return 'no certificate';
  if (!ca) return 'the site CA that signed it is gone';
  const problem = chainProblem(pair.certPem, ca, { server: names }, now);
  if (problem) return problem;
  // one ending with its issuer is as long as a new one would be: renewing it would gain nothing
  const renewBy = Math.min(now.getTime() + RENEW_MARGIN_DAYS * DAY_MS, issuerEnd(ca).getTime() - 1000);
  if (Date.parse(leaf.validTo) <= renewBy) return `it expires within ${RENEW_MARGIN_DAYS} days`;
  return undefined;
}
