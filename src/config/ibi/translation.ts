/**
 * What each field of a config medium became, for `validate --translate`: the native document
 * shows the fields that have a native place; this record names every field the medium gave,
 * those without one too (the cluster identity, the admin CA, the signers, the unused keys), so
 * nothing is dropped silently. Key material never appears: a signer is named by its subject, a CA
 * by its subject and fingerprint.
 */
import { certificatesIn } from '../../base/pem.js';
import type { ImageBasedSite, InstallerSigner } from './image-based.js';
import { ADMIN_CA_FIELD, FIELD_TABLE, type FieldUse } from './field-table.js';

export interface FieldFate {
  /** dotted path in manifest.json */
  field: string;
  use: FieldUse;
  /** where it went: a native site-config field or the cluster object */
  became?: string;
  /** what was taken, when the native document does not show it (never key material) */
  value?: string;
  /** what happens to it */
  note: string;
}

const subjectOf = (signer: InstallerSigner): string =>
  [
    ...(signer.subject.organizationalUnit ? [`OU=${signer.subject.organizationalUnit}`] : []),
    `CN=${signer.subject.commonName}`,
  ].join(', ');

/** The CA certificates of a bundle, by subject and SHA-256 fingerprint. */
const describeCas = (pem: string): string =>
  certificatesIn(pem)
    .map((c) => `${c.subject.replace(/\n/g, ', ')} (SHA-256 ${c.fingerprint256})`)
    .join('; ');

/** The value the native document does not carry, for the fields that have one. */
function shownValue(field: string, media: ImageBasedSite): string | undefined {
  const signerField = (s: InstallerSigner | undefined) =>
    s?.field.endsWith(`$.${field}`) ? `the private key of ${subjectOf(s)} (not shown)` : undefined;
  if (field === 'cluster_id') return media.clusterID;
  if (field === 'infra_id') return media.infraID;
  if (field === 'release_registry') return media.releaseRegistry;
  if (field.endsWith('.ingress_certificate_cn')) return media.ingressSigner?.subject.commonName;
  if (field === ADMIN_CA_FIELD && media.adminClientCaPem !== undefined)
    return `${describeCas(media.adminClientCaPem)}; the factory's admin.kubeconfig is revoked (spec.access.factoryAdminKubeconfig: revoke)`;
  return signerField(media.apiSigner) ?? signerField(media.ingressSigner);
}

/** Every field the medium gave, in the translation table's order, with what became of it. */
export function translationRecord(media: ImageBasedSite): FieldFate[] {
  const given = new Set(media.given);
  return FIELD_TABLE.filter((row) => given.has(row.field)).map((row) => {
    const value = shownValue(row.field, media);
    return {
      field: row.field,
      use: row.use,
      ...(row.native !== undefined && { became: row.native }),
      ...(value !== undefined && { value }),
      note: row.note,
    };
  });
}
