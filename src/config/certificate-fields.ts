/** The certificate fields of a site-config: each file read, then checked at the time passed in. */
import type { Finding } from '../base/findings.js';
import { certificatesIn } from '../base/pem.js';
import { accessCaFindings } from '../certs/ca-checks.js';
import { caBundleProblem, checkPair, trustBundleProblem } from './certificates.js';
import type { FileReader } from './read.js';
import type { Site, SiteAccess, TrustBundle } from './site.js';
import type { SiteConfigV1 } from './v1/schema.js';

export async function readCertificates(
  now: Date,
  config: SiteConfigV1,
  files: FileReader,
  findings: Finding[],
): Promise<Site['certificates']> {
  const out: Site['certificates'] = {};
  for (const which of ['ingress', 'api'] as const) {
    const pair = config.spec.certificates?.[which];
    if (!pair) continue;
    const certPath = `$.spec.certificates.${which}.certFile`;
    const keyPath = `$.spec.certificates.${which}.keyFile`;
    const certPem = (await files.read(certPath, pair.certFile)).toString('utf8');
    const keyPem = (await files.read(keyPath, pair.keyFile)).toString('utf8');
    if (!certPem || !keyPem) continue;
    const checked = checkPair(now, { certPem, keyPem }, certPath, keyPath, findings);
    if (checked) out[which] = checked;
  }
  return out;
}

export async function readAccess(
  now: Date,
  config: SiteConfigV1,
  files: FileReader,
  findings: Finding[],
): Promise<SiteAccess | undefined> {
  const access = config.spec.access;
  if (!access) return undefined;
  const out: SiteAccess = {};
  if (access.kubeadminPasswordHash !== undefined) out.kubeadminPasswordHash = access.kubeadminPasswordHash;
  if (access.clientCAFile !== undefined) {
    const at = '$.spec.access.clientCAFile';
    const pem = (await files.read(at, access.clientCAFile)).toString('utf8');
    const problem = pem ? caBundleProblem(now, pem) : undefined;
    if (problem) findings.push({ severity: 'error', path: at, ...problem });
    // a problem of time alone may be deferred to the clock step: the CA is kept for it
    if (pem && (!problem || problem.window)) out.clientCaPem = pem;
  }
  if (access.siteCA !== undefined) {
    const certPath = '$.spec.access.siteCA.certFile';
    const keyPath = '$.spec.access.siteCA.keyFile';
    const certPem = (await files.read(certPath, access.siteCA.certFile)).toString('utf8');
    const keyPem = (await files.read(keyPath, access.siteCA.keyFile)).toString('utf8');
    // the validity of every certificate of the file is the bundle check's, said once
    const checked =
      certPem && keyPem ? checkPair(now, { certPem, keyPem }, certPath, keyPath, findings, false) : undefined;
    const problem = checked ? caBundleProblem(now, checked.certPem) : undefined;
    if (problem) findings.push({ severity: 'error', path: certPath, ...problem });
    if (checked && (!problem || problem.window)) out.siteCa = checked;
  }
  // revoked by default once the site has administrators of its own; never without them; kept
  // (a revoked CA put back) only when the site-config says so
  const factoryAdmin = access.factoryAdminKubeconfig ?? (access.clientCAFile !== undefined ? 'revoke' : undefined);
  if (factoryAdmin === 'revoke' && access.clientCAFile === undefined)
    findings.push({
      severity: 'error',
      path: '$.spec.access.factoryAdminKubeconfig',
      message:
        "revoke needs spec.access.clientCAFile: without the site's own admin client CA no administrator certificate would be left at the site",
    });
  else if (factoryAdmin !== undefined) out.factoryAdminKubeconfig = factoryAdmin;
  findings.push(
    ...accessCaFindings(out, {
      clientCa: '$.spec.access.clientCAFile',
      siteCaCert: '$.spec.access.siteCA.certFile',
      siteCaKey: '$.spec.access.siteCA.keyFile',
    }),
  );
  return out;
}

export async function readTrustBundle(
  now: Date,
  config: SiteConfigV1,
  files: FileReader,
  findings: Finding[],
): Promise<TrustBundle | undefined> {
  const bundle = config.spec.trustBundle;
  if (!bundle) return undefined;
  const at = bundle.caBundleFile !== undefined ? '$.spec.trustBundle.caBundleFile' : '$.spec.trustBundle.caBundle';
  const pem =
    bundle.caBundleFile !== undefined
      ? (await files.read(at, bundle.caBundleFile)).toString('utf8')
      : (bundle.caBundle ?? '');
  const problem = trustBundleProblem(pem);
  if (problem) {
    findings.push({ severity: 'error', path: at, message: problem });
    return undefined;
  }
  for (const cert of certificatesIn(pem))
    if (Date.parse(cert.validTo) < now.getTime())
      findings.push({
        severity: 'warning',
        path: at,
        message: `${cert.subject.replace(/\n/g, ', ')} expired on ${cert.validTo}: it is trusted for nothing`,
      });
  return { caBundlePem: pem, proxyTrustedCA: bundle.proxyTrustedCA ?? config.spec.proxy !== undefined };
}
