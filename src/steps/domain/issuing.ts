/**
 * The domain step's issuing: what its decision holds of each secret (the site's own pair, or the
 * issuer of the one issued, as PEM) and the secrets written from it, each certificate issued at
 * the decision's time.
 */
import { X509Certificate } from 'node:crypto';
import { keyToPem } from '../../certs/issue.js';
import { issueServing, servingWindow, siteCaGiven, type PemPair, type SiteCa } from '../../certs/site-certs.js';
import type { Kube } from '../../ports/kube.js';
import type { StepContext } from '../step.js';
import { tlsSecret, writeSecret, type WantedSecret } from './certificates.js';

/** A kubernetes.io/tls secret apply writes: the site's own pair, or one issued now for `names`. */
export interface SecretWrite {
  name: string;
  namespace: string;
  exists: boolean;
  names: string[];
  /** the site's own certificate and key, written as they are */
  pair?: PemPair;
  /** the issuer (its chain after it) of the one issued; absent: the site CA apply creates first */
  issuer?: PemPair;
}

/** The write of a wanted secret: the installer's signer, else the site CA `ca` (absent: made first). */
export function secretWrite(want: WantedSecret, exists: boolean, ca: SiteCa | undefined): SecretWrite {
  const issuer = want.signer ?? ca;
  return {
    name: want.name,
    namespace: want.namespace,
    exists,
    names: want.names,
    ...(want.given
      ? { pair: want.given }
      : issuer && { issuer: { certPem: issuer.certPem, keyPem: keyToPem(issuer.key) } }),
  };
}

/**
 * Writes the secrets, issuing those without a pair of their own at `now`, under their issuer or
 * the site CA `created`. A certificate never outlives its issuer: an issuer that ends soon is said
 * on the console first.
 */
export async function writeSecrets(
  ctx: StepContext,
  kube: Kube,
  secrets: readonly SecretWrite[],
  now: Date,
  created: SiteCa | undefined,
): Promise<void> {
  const issuers = new Map<string, SiteCa>();
  const issuerOf = (pem: PemPair | undefined): SiteCa => {
    if (!pem) return created!;
    if (!issuers.has(pem.certPem)) issuers.set(pem.certPem, siteCaGiven(pem)!);
    return issuers.get(pem.certPem)!;
  };
  const toIssue = secrets.filter((w) => !w.pair);
  const ending = [...new Set(toIssue.map((w) => issuerOf(w.issuer)))].flatMap(
    (issuer) => servingWindow(issuer, now).warning ?? [],
  );
  for (const warning of ending) {
    ctx.log.warn({ warning }, warning);
    await ctx.console?.(`WARN ${warning}`);
  }
  await Promise.all(
    secrets.map(async (w) => {
      const pair = w.pair ?? (await issueServing(w.names, issuerOf(w.issuer), now));
      await writeSecret(kube, tlsSecret(w.name, w.namespace, pair), w.exists);
      ctx.log.info(
        { secret: `${w.namespace}/${w.name}`, names: w.names, serial: new X509Certificate(pair.certPem).serialNumber },
        `secret ${w.name} written`,
      );
    }),
  );
}
