/**
 * The domain step's certificates: the secrets the site's names need (the router's default
 * certificate, the operators' component routes, the API's), the site's own pairs checked against
 * them, and the kubernetes.io/tls secrets written for them.
 */
import type { CertificatePair } from '../../config/site.js';
import type { SiteCa } from '../../certs/site-certs.js';
import { certificatesIn } from '../../base/pem.js';
import { matchesKey, parseKey } from '../../certs/key-types.js';
import {
  COMPONENT_ROUTES,
  CONFIG_NAMESPACE,
  managedLabels,
  ROUTER_NAMESPACE,
  SECRET_PREFIX,
  type SecretObject,
  type SiteDomains,
} from '../../kube/openshift.js';
import type { Kube } from '../../ports/kube.js';

export interface WantedSecret {
  name: string;
  namespace: string;
  /** DNS names the certificate must serve */
  names: string[];
  /** the site's own pair; otherwise the site CA signs one */
  given?: CertificatePair;
  /** which site-config field the given pair came from */
  field?: string;
  /** the installer's signer from image-based config media, instead of the site CA */
  signer?: SiteCa;
}

export const API_SECRET = `${SECRET_PREFIX}api`;
/** the router's default certificate, in openshift-ingress */
export const APPS_SECRET = `${SECRET_PREFIX}apps-wildcard`;
/**
 * The secrets the site's domain needs. The router's default certificate covers the factory's apps
 * domain too: the IngressController keeps its domain, and the routes left under it (the canary, the
 * operators' default routes) are still served. A site's own ingress certificate serves as it is.
 */
export function wantedSecrets(
  domains: SiteDomains,
  factoryApps: string,
  given: { ingress?: CertificatePair; api?: CertificatePair },
): WantedSecret[] {
  const ingress = given.ingress && { given: given.ingress, field: 'spec.certificates.ingress' };
  const wildcards = [...new Set([domains.apps, factoryApps])].map((d) => `*.${d}`);
  return [
    { name: APPS_SECRET, namespace: ROUTER_NAMESPACE, names: ingress ? [`*.${domains.apps}`] : wildcards, ...ingress },
    ...COMPONENT_ROUTES.map((r) => ({
      name: r.secret,
      namespace: CONFIG_NAMESPACE,
      names: [`${r.host}.${domains.apps}`],
      ...ingress,
    })),
    {
      name: API_SECRET,
      namespace: CONFIG_NAMESPACE,
      names: [domains.api],
      ...(given.api && { given: given.api, field: 'spec.certificates.api' }),
    },
  ];
}

export const secretRef = (name: string, namespace: string) => ({ apiVersion: 'v1', kind: 'Secret', name, namespace });

export function pairIn(secret: SecretObject | undefined): CertificatePair | undefined {
  const crt = secret?.data?.['tls.crt'];
  const key = secret?.data?.['tls.key'];
  if (!crt || !key) return undefined;
  return { certPem: Buffer.from(crt, 'base64').toString('utf8'), keyPem: Buffer.from(key, 'base64').toString('utf8') };
}

/** Why the site's own pair cannot serve these names; undefined when it can. */
export function givenProblem(want: WantedSecret): string | undefined {
  try {
    const leaf = certificatesIn(want.given!.certPem)[0];
    if (!leaf) return `${want.field}: no certificate in the file`;
    if (!matchesKey(leaf, parseKey(want.given!.keyPem))) return `${want.field}: the key does not match the certificate`;
    const uncovered = want.names.filter(
      (n) => (n.startsWith('*.') ? leaf.checkHost(`x${n.slice(1)}`) : leaf.checkHost(n)) === undefined,
    );
    if (uncovered.length > 0) return `${want.field}: the certificate does not cover ${uncovered.join(', ')}`;
  } catch {
    return `${want.field}: the certificate or key cannot be read`;
  }
  return undefined;
}

export const secretKey = (w: { namespace: string; name: string }) => `${w.namespace}/${w.name}`;

export function tlsSecret(name: string, namespace: string, pair: CertificatePair): SecretObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, labels: { ...managedLabels } },
    type: 'kubernetes.io/tls',
    data: {
      'tls.crt': Buffer.from(pair.certPem).toString('base64'),
      'tls.key': Buffer.from(pair.keyPem).toString('base64'),
    },
  };
}

export async function writeSecret(kube: Kube, secret: SecretObject, exists: boolean): Promise<void> {
  const ref = secretRef(secret.metadata.name, secret.metadata.namespace!);
  if (!exists || !(await kube.get(ref))) {
    try {
      await kube.create(secret);
      return;
    } catch (err) {
      // created meanwhile (a retried create whose first answer was lost): replace it below
      if (!(await kube.get(ref))) throw err;
    }
  }
  await kube.update<SecretObject>(ref, (current) => ({
    ...current,
    type: secret.type,
    data: secret.data,
    metadata: { ...current.metadata, labels: { ...current.metadata.labels, ...managedLabels } },
  }));
}
