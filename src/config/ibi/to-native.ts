/**
 * The native site-config document a manifest.json becomes, by the field table, and where a native
 * field came from. Go's encoder writes struct fields even when empty (`KubeconfigCryptoRetention`
 * has no tag at all, `additionalTrustBundle` is a struct under omitempty), and an empty string
 * means "not given" to every consumer, so empty values count as absent.
 */
import type { Finding } from '../../base/findings.js';
import { API_VERSION, KIND } from '../v1/schema.js';
import { at, error, FIELD_TABLE, INGRESS, network, type Translation } from './field-table.js';
import type { ImageBasedSite } from './image-based.js';
import { MANIFEST_FILE, SEED_RECONFIGURATION_VERSION, type SeedReconfiguration } from './seed-reconfiguration.js';

/** A value Go's encoder writes for "nothing": empty strings, lists, maps and structs of nothing. */
export function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.values(value).every(isEmpty);
  return false;
}

/** The value at a dotted path of the manifest. */
const valueAt = (seed: SeedReconfiguration, field: string): unknown =>
  field.split('.').reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], seed);

/**
 * The native site-config document a manifest.json becomes. Its findings name the manifest's
 * fields; an error in them means the media is refused (exit 2) before anything is validated further.
 */
export function translateSeedReconfiguration(seed: SeedReconfiguration): {
  document: unknown;
  imageBased: ImageBasedSite;
  findings: Finding[];
} {
  const out: Translation = { spec: {}, findings: [], imageBased: { unused: [], given: ['api_version'] } };
  if (seed.api_version !== SEED_RECONFIGURATION_VERSION)
    out.findings.push(
      error(
        at('api_version'),
        `unsupported seed reconfiguration version ${seed.api_version} (this agent reads version ${SEED_RECONFIGURATION_VERSION})`,
      ),
    );
  for (const row of FIELD_TABLE) {
    if (row.field === 'api_version') continue;
    const value = valueAt(seed, row.field);
    if (isEmpty(value)) continue;
    out.imageBased.given.push(row.field);
    if (row.map) row.map(value as never, out, at(row.field));
    else if (row.use === 'unused') out.imageBased.unused.push({ field: row.field, reason: row.note });
    else out.findings.push(error(at(row.field), row.note));
  }
  for (const required of ['base_domain', 'pull_secret'] as const)
    if (isEmpty(seed[required])) out.findings.push(error(at(required), 'required'));
  if (out.ingressKey) {
    if (out.ingressCertificateCN === undefined)
      out.findings.push(
        error(at(`${INGRESS}.ingress_certificate_cn`), "required with ingress_ca: the signer's subject"),
      );
    else out.imageBased.ingressSigner = { subject: { commonName: out.ingressCertificateCN }, ...out.ingressKey };
  }
  // LCA keeps the network as it is when no nmstate is given; so does an empty desired state here
  network(out).nmstate ??= {};
  const name = seed.hostname || seed.cluster_name || 'cluster-config';
  return {
    document: { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: out.spec },
    imageBased: out.imageBased,
    findings: out.findings,
  };
}

/** Where a native field came from: a finding on `$.spec.baseDomain` is reported on manifest.json's `base_domain`. */
export function sourceOf(nativePath: string): string {
  for (const row of FIELD_TABLE) {
    if (!row.native) continue;
    const native = `$.${row.native}`;
    if (nativePath === native || nativePath.startsWith(`${native}.`) || nativePath.startsWith(`${native}[`))
      return `${at(row.field)} (${nativePath})`;
  }
  if (nativePath === '$.metadata.name') return `${at('hostname')} (site id ${nativePath})`;
  return `${MANIFEST_FILE} (${nativePath})`;
}
