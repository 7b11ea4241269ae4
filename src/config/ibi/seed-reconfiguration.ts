/**
 * The image-based install's config media: `cluster-configuration/manifest.json`, the
 * `SeedReconfiguration` JSON of openshift-kni/lifecycle-agent (`api/seedreconfig/seedreconfig.go`,
 * `SeedReconfigurationVersion = 1`) that `openshift-install image-based create config-image` and the
 * image-based-install-operator write, and the digest mirror sets beside it. What becomes of each
 * field is the table in field-table.ts; to-native.ts translates a manifest by it into a native
 * site-config document.
 */
import * as z from 'zod';
import type { Finding } from '../../base/findings.js';

export const MANIFEST_FILE = 'cluster-configuration/manifest.json';
/** mirror sets the installer writes beside manifest.json (older installers: a bare list of digest sources) */
export const MIRROR_FILES = [
  'cluster-configuration/manifests/image-digest-mirror-set.json',
  'cluster-configuration/manifests/image-digest-sources.json',
] as const;
export const SEED_RECONFIGURATION_VERSION = 1;

const text = z.string();
const proxySchema = z.strictObject({
  httpProxy: text.optional(),
  httpsProxy: text.optional(),
  noProxy: text.optional(),
});

export const seedReconfigurationSchema = z.strictObject({
  api_version: z.number().int(),
  base_domain: text.optional(),
  cluster_name: text.optional(),
  cluster_id: text.optional(),
  infra_id: text.optional(),
  node_ip: text.optional(),
  node_ips: z.array(text).optional(),
  release_registry: text.optional(),
  hostname: text.optional(),
  KubeconfigCryptoRetention: z
    .strictObject({
      KubeAPICrypto: z
        .strictObject({
          ServingCrypto: z
            .strictObject({
              localhost_signer_private_key: text.optional(),
              service_network_signer_private_key: text.optional(),
              loadbalancer_external_signer_private_key: text.optional(),
            })
            .optional(),
          ClientAuthCrypto: z.strictObject({ admin_ca_certificate: text.optional() }).optional(),
        })
        .optional(),
      IngresssCrypto: z
        .strictObject({ ingress_ca: text.optional(), ingress_certificate_cn: text.optional() })
        .optional(),
    })
    .optional(),
  ssh_key: text.optional(),
  server_ssh_keys: z.array(z.strictObject({ file_name: text, file_content: text })).optional(),
  kubeadmin_password_hash: text.optional(),
  raw_nm_state_config: text.optional(),
  pull_secret: text.optional(),
  machine_network: text.optional(),
  machine_networks: z.array(text).optional(),
  proxy: proxySchema.nullable().optional(),
  status_proxy: proxySchema.nullable().optional(),
  install_config: text.optional(),
  chrony_config: text.optional(),
  additionalTrustBundle: z
    .strictObject({
      userCaBundle: text.optional(),
      proxyConfigmapName: text.optional(),
      proxyConfigmapBundle: text.optional(),
    })
    .optional(),
  node_labels: z.record(z.string(), z.string()).optional(),
});

export type SeedReconfiguration = z.infer<typeof seedReconfigurationSchema>;

/** A digest mirror set beside manifest.json, as the native `imageDigestMirrors`. */
export function mirrorsFromFile(name: string, doc: unknown): { mirrors?: unknown[]; finding?: Finding } {
  // image-digest-mirror-set.json is an ImageDigestMirrorSet; image-digest-sources.json a bare list of sources
  const list = Array.isArray(doc)
    ? doc
    : (doc as { spec?: { imageDigestMirrors?: unknown } } | null)?.spec?.imageDigestMirrors;
  if (!Array.isArray(list))
    return {
      finding: {
        severity: 'error',
        path: `${name}: $`,
        message: 'expected an ImageDigestMirrorSet (spec.imageDigestMirrors) or a list of digest sources',
      },
    };
  return { mirrors: list };
}
