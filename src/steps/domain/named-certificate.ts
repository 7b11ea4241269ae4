/**
 * The API's named certificate: apiserver.config's namedCertificates with the agent's entry for the
 * site's API name, and what the kube-apiserver operator would refuse of the merged list.
 */
import { SECRET_PREFIX, type NamedCertificate, type SiteDomains } from '../../kube/openshift.js';
import { API_SECRET } from './certificates.js';

/** the kube-apiserver operator refuses a longer namedCertificates list (observe_apiserver.go) */
export const MAX_NAMED_CERTIFICATES = 10;

/** Why the kube-apiserver operator would refuse the merged list, or undefined. */
export function namedCertificateProblem(merged: readonly NamedCertificate[], domains: SiteDomains): string | undefined {
  const field = 'apiserver.config spec.servingCerts.namedCertificates';
  const holder = merged.find(
    (c) => !c.servingCertificate.name.startsWith(SECRET_PREFIX) && (c.names ?? []).includes(domains.api),
  );
  if (holder)
    return `${field}: the entry for secret ${holder.servingCertificate.name} already names ${domains.api}, and the kube-apiserver operator refuses a name held by two entries: remove ${domains.api} from that entry`;
  if (merged.length > MAX_NAMED_CERTIFICATES)
    return `${field}: ${merged.length} entries with the site's, and the kube-apiserver operator accepts at most ${MAX_NAMED_CERTIFICATES}: remove ${merged.length - MAX_NAMED_CERTIFICATES} of the others`;
  return undefined;
}

/** namedCertificates with the agent's entries replaced by the one for the site's API name; others kept. */
export function mergeNamedCertificates(current: readonly NamedCertificate[], domains: SiteDomains): NamedCertificate[] {
  return [
    ...current.filter((c) => !c.servingCertificate.name.startsWith(SECRET_PREFIX)),
    { names: [domains.api], servingCertificate: { name: API_SECRET } },
  ];
}
