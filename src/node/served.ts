/**
 * What the cluster serves, as a client at the site sees it: a TLS handshake to an address the
 * site's name leads to, with the name as SNI (the kube-apiserver picks its namedCertificate by
 * it, the router its route's certificate), verified by node:tls (OpenSSL) against the site's CA
 * bundle alone, then the name by tls.checkServerIdentity. A certificate stored in a Secret proves
 * nothing until this passes: the router or the API server may still serve another one.
 */
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { hostPort } from '../base/addresses.js';
import { certificatesIn } from '../base/pem.js';
import type { Site } from '../config/site.js';
import type { StepContext } from '../engine/step.js';
import { installerIssuers } from '../config/ibi/signers.js';
import { describeCert, selfSigned } from '../certs/chain.js';
import { siteCaCertificate, siteCaGiven } from '../certs/site-certs.js';

export interface ServedTarget {
  /** the site's name, sent as SNI and checked against the certificate */
  host: string;
  address: string;
  port: number;
}

/** OpenSSL's verification errors, said as what is wrong with the served certificate. */
const WHY: Record<string, (leaf: X509Certificate) => string> = {
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: (leaf) =>
    `its issuer ${leaf.issuer.replace(/\n/g, ', ')} is not among the site's CAs, nor served after it`,
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: (leaf) =>
    `its issuer ${leaf.issuer.replace(/\n/g, ', ')} is not among the site's CAs, nor served after it`,
  DEPTH_ZERO_SELF_SIGNED_CERT: () => "it is self-signed, and not one of the site's CAs",
  SELF_SIGNED_CERT_IN_CHAIN: () => "its chain ends at a root that is not one of the site's CAs",
  CERT_HAS_EXPIRED: (leaf) => `it (or a CA of its chain) has expired; it is valid until ${leaf.validTo}`,
  CERT_NOT_YET_VALID: (leaf) => `it (or a CA of its chain) is not valid yet; it is valid from ${leaf.validFrom}`,
  CERT_SIGNATURE_FAILURE: () => "its signature does not verify with the site's CA",
};

const served = (leaf: X509Certificate) =>
  `${describeCert(leaf)} (issued by ${leaf.issuer.replace(/\n/g, ', ')}, serial ${leaf.serialNumber}, valid until ${leaf.validTo})`;

/**
 * Why what `target` serves for its name does not verify against `trust` (PEM, the only anchors),
 * naming the endpoint, the certificate served and the cause; undefined when it verifies.
 */
export function servedProblem(target: ServedTarget, trust: string, timeoutMs: number): Promise<string | undefined> {
  const endpoint = `${target.host} at ${hostPort(target.address, target.port)}`;
  return new Promise((resolve) => {
    const socket = tls.connect({
      host: target.address,
      port: target.port,
      servername: target.host,
      ca: trust,
      // judged below, so the reason names the certificate
      rejectUnauthorized: false,
    });
    const done = (reason: string | undefined) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(timeoutMs, () => done(`${endpoint}: no TLS answer within ${timeoutMs} ms`));
    socket.once('error', (err: NodeJS.ErrnoException) =>
      done(`${endpoint}: nothing answers (${err.code ?? err.message})`),
    );
    socket.once('secureConnect', () => {
      const peer = socket.getPeerCertificate();
      if (!peer.raw) return done(`${endpoint}: served no certificate`);
      const leaf = new X509Certificate(peer.raw);
      const code = String(socket.authorizationError);
      // node:tls checks the name itself when given a servername: said below with what the certificate names
      if (!socket.authorized && code !== 'ERR_TLS_CERT_ALTNAME_INVALID') {
        return done(
          `${endpoint} served ${served(leaf)}, which does not verify with the site's CAs: ${WHY[code]?.(leaf) ?? code}`,
        );
      }
      const mismatch = tls.checkServerIdentity(target.host, peer);
      done(
        mismatch &&
          `${endpoint} served ${served(leaf)}, which is not for ${target.host}: it names ${leaf.subjectAltName ?? 'no DNS name'}`,
      );
    });
  });
}

/**
 * The site's CA bundle, what a client at the site trusts the cluster by: the site CA (the
 * site-config's or the one generated on the node), the installer's signers from config media, the
 * trust bundle, and a self-signed certificate the site gives as its own (its own anchor).
 */
export async function siteTrust(ctx: Pick<StepContext<Site>, 'site' | 'fs' | 'stateDir' | 'clock'>): Promise<string> {
  const { site } = ctx;
  const signers = await installerIssuers(site, ctx.clock.now());
  const given = [site.certificates.api, site.certificates.ingress].flatMap((pair) => {
    const last = pair ? certificatesIn(pair.certPem).at(-1) : undefined;
    return last && selfSigned(last) ? [last.toString()] : [];
  });
  return [
    siteCaGiven(site.access?.siteCa)?.certPem ?? (await siteCaCertificate(ctx.fs, ctx.stateDir)) ?? '',
    signers.api?.certPem ?? '',
    signers.apps?.certPem ?? '',
    site.trustBundle?.caBundlePem ?? '',
    ...given,
  ].join('');
}
