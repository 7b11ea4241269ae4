/**
 * Every judgment of time admission made on the site-config's certificates, as findings with their
 * windows: the admin client CA, the site CA and its chain, the site's own serving certificates and
 * their CAs. Admission judged them on the clock it had; one that passed only because that clock was
 * wrong (a CA that expired while the node's RTC lagged, or one not yet valid on a clock ahead) is
 * caught when the clock step judges them all again on the synchronised clock (src/base/true-time.ts).
 */
import type { Finding } from '../base/findings.js';
import { certificatesIn } from '../base/pem.js';
import { certWindow, describeCert } from '../certs/chain.js';
import type { Site } from './site.js';

export function timeJudgments(site: Pick<Site, 'access' | 'certificates'>): Finding[] {
  const files: [string, string | undefined][] = [
    ['$.spec.access.clientCAFile', site.access?.clientCaPem],
    ['$.spec.access.siteCA.certFile', site.access?.siteCa?.certPem],
    ['$.spec.certificates.api.certFile', site.certificates.api?.certPem],
    ['$.spec.certificates.ingress.certFile', site.certificates.ingress?.certPem],
  ];
  return files.flatMap(([path, pem]) =>
    (pem ? certificatesIn(pem) : []).map((cert) => ({
      severity: 'error' as const,
      path,
      message: describeCert(cert),
      window: certWindow(cert),
    })),
  );
}
