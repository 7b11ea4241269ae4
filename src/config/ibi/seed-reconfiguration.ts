/**
 * The image-based install's config media: `cluster-configuration/manifest.json`, the
 * `SeedReconfiguration` JSON of openshift-kni/lifecycle-agent (`api/seedreconfig/seedreconfig.go`,
 * `SeedReconfigurationVersion = 1`) that `openshift-install image-based create config-image` and the
 * image-based-install-operator write. It is translated here, by one table of field -> field, into a
 * native site-config document, which is then validated and planned like any other.
 *
 * Go's encoder writes struct fields even when empty (`KubeconfigCryptoRetention` has no tag at all,
 * `additionalTrustBundle` is a struct under omitempty), and an empty string means "not given" to
 * every consumer, so empty values count as absent; anything else is either mapped or refused by name.
 */
import * as z from 'zod';
import type { Finding } from '../../base/findings.js';
import { API_VERSION, KIND } from '../v1/schema.js';
import { USER_CA_BUNDLE } from '../../kube/openshift.js';
import { DocumentError, parseYamlDocument } from '../yaml.js';

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

type NativeSpec = Record<string, unknown>;

interface Translation {
  spec: NativeSpec;
  findings: Finding[];
}

/** One row of the table: a manifest.json field and the native field it becomes, or why it is refused. */
export interface FieldRow {
  /** JSON path in manifest.json */
  field: string;
  /** the native site-config field, or undefined when refused */
  native?: string;
  /** for the README: what happens to the value */
  note: string;
  /** mapped fields: sets the native field from a non-empty value (findings name the manifest's path) */
  map?: (value: never, out: Translation, at: string) => void;
}

const at = (field: string) => `${MANIFEST_FILE}: $.${field}`;
const error = (path: string, message: string): Finding => ({ severity: 'error', path, message });

const network = (out: Translation): NativeSpec => (out.spec.network ??= {}) as NativeSpec;

/** Seed identity and re-signing material: only a certificate re-signer like recert can use them. */
const RESIGNER = 'only a certificate re-signer (recert) run on a seed image can use it; sno-relocate keeps the';

export const FIELD_TABLE: readonly FieldRow[] = [
  { field: 'api_version', note: `must be ${SEED_RECONFIGURATION_VERSION}` },
  {
    field: 'base_domain',
    native: 'spec.baseDomain',
    note: 'required',
    map: (v: string, out) => (out.spec.baseDomain = v),
  },
  {
    field: 'cluster_name',
    native: 'spec.clusterName',
    note: 'also the site id (metadata.name) when there is no hostname',
    map: (v: string, out) => (out.spec.clusterName = v),
  },
  { field: 'hostname', native: 'spec.hostname', note: '', map: (v: string, out) => (out.spec.hostname = v) },
  {
    field: 'ssh_key',
    native: 'spec.sshAuthorizedKeys',
    note: 'one key per line',
    map: (v: string, out) =>
      (out.spec.sshAuthorizedKeys = v
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '')),
  },
  {
    field: 'pull_secret',
    native: 'spec.pullSecret',
    note: 'required (the dockerconfigjson text, parsed)',
    map: (v: string, out, path) => {
      try {
        out.spec.pullSecret = JSON.parse(v);
      } catch {
        // never echo the parser's message: it quotes the secret's text
        out.findings.push(error(path, 'not valid JSON (a container registry auth file is expected)'));
      }
    },
  },
  {
    field: 'raw_nm_state_config',
    native: 'spec.network.nmstate',
    note: 'nmstate YAML text, parsed; without it the network is kept as it is',
    map: (v: string, out, path) => {
      try {
        network(out).nmstate = parseYamlDocument(Buffer.from(v, 'utf8'), 'raw_nm_state_config');
      } catch (err) {
        if (!(err instanceof DocumentError)) throw err;
        out.findings.push(error(path, err.message.replace('raw_nm_state_config: ', '')));
      }
    },
  },
  {
    field: 'kubeadmin_password_hash',
    native: 'spec.access.kubeadminPasswordHash',
    note: 'written into the existing kube-system/kubeadmin secret in place',
    map: (v: string, out) => (((out.spec.access ??= {}) as NativeSpec).kubeadminPasswordHash = v),
  },
  {
    field: 'machine_networks',
    native: 'spec.network.machineNetworks',
    note: "nodeip-configuration's hint; site networks only, never the internal IP's",
    map: (v: string[], out) => (network(out).machineNetworks = v),
  },
  {
    field: 'machine_network',
    native: 'spec.network.machineNetworks',
    note: 'the older single field: used when machine_networks is empty, else it must be one of them',
    map: (v: string, out, path) => {
      const list = network(out).machineNetworks as string[] | undefined;
      if (list === undefined) network(out).machineNetworks = [v];
      else if (!list.includes(v)) out.findings.push(error(path, 'is not one of machine_networks'));
    },
  },
  {
    field: 'proxy',
    native: 'spec.proxy',
    note: 'the cluster-wide proxy; noProxy as given (the installer has added the cluster networks to it)',
    map: (v: Record<string, string>, out) =>
      (out.spec.proxy = Object.fromEntries(Object.entries(v).filter(([, value]) => value !== ''))),
  },
  {
    field: 'chrony_config',
    native: 'spec.chronyConfig',
    note: 'the whole chrony.conf; chronyd runs with it',
    map: (v: string, out) => (out.spec.chronyConfig = v),
  },
  {
    field: 'additionalTrustBundle',
    native: 'spec.trustBundle',
    note: 'userCaBundle becomes caBundle; proxyConfigmapName `user-ca-bundle` (with proxyConfigmapBundle equal to userCaBundle) becomes proxyTrustedCA',
    map: (v: { userCaBundle?: string; proxyConfigmapName?: string; proxyConfigmapBundle?: string }, out, path) => {
      const { userCaBundle = '', proxyConfigmapName: name = '', proxyConfigmapBundle: bundle = '' } = v;
      // lifecycle-agent's rules (post-pivot): both or neither, and the bundle equal to userCaBundle
      if ((name === '') !== (bundle === ''))
        out.findings.push(
          error(`${path}.proxyConfigmapName`, 'proxyConfigmapName and proxyConfigmapBundle go together'),
        );
      else if (name !== '' && name !== USER_CA_BUNDLE)
        out.findings.push(
          error(
            `${path}.proxyConfigmapName`,
            `only ${USER_CA_BUNDLE}, the ConfigMap the installer makes, is supported`,
          ),
        );
      else if (name !== '' && bundle !== userCaBundle)
        out.findings.push(error(`${path}.proxyConfigmapBundle`, `must equal userCaBundle for ${USER_CA_BUNDLE}`));
      else out.spec.trustBundle = { caBundle: userCaBundle, proxyTrustedCA: name !== '' };
    },
  },
  {
    field: 'node_labels',
    native: 'spec.nodeLabels',
    note: "set on this node's Node; labels the agent did not set are never removed",
    map: (v: Record<string, string>, out) => (out.spec.nodeLabels = v),
  },
  {
    field: 'cluster_id',
    note: `refused: the cluster's identity (ClusterVersion spec.clusterID) is the factory's; ${RESIGNER} cluster`,
  },
  { field: 'infra_id', note: `refused: the infrastructure name is fixed at install time; ${RESIGNER} installed one` },
  {
    field: 'release_registry',
    note: 'refused: rewriting the release registry in operator deployments is a seed re-identification; use imageDigestMirrors',
  },
  {
    field: 'KubeconfigCryptoRetention',
    note: `refused: signer private keys and the admin client CA are for re-signing every certificate; ${RESIGNER} cluster's signers and makes a site CA for the new names`,
  },
  { field: 'server_ssh_keys', note: 'refused: the node keeps its SSH host keys (no native field)' },
  { field: 'node_ip', note: 'refused: the node IP is the internal IP on br-ex (spec.network.internalIP)' },
  { field: 'node_ips', note: 'refused: the node IP is the internal IP on br-ex (spec.network.internalIP)' },
  { field: 'status_proxy', note: 'refused: an image-based upgrade field; sno-relocate does not upgrade' },
  { field: 'install_config', note: 'refused: an image-based upgrade field; sno-relocate does not upgrade' },
];

/** A value Go's encoder writes for "nothing": empty strings, lists, maps and structs of nothing. */
export function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.values(value).every(isEmpty);
  return false;
}

/** The first non-empty leaf under `value`, as a path suffix: names which key made a refused field non-empty. */
function firstSet(value: unknown, path: string): string {
  if (value !== null && typeof value === 'object' && !Array.isArray(value))
    for (const [key, child] of Object.entries(value)) if (!isEmpty(child)) return firstSet(child, `${path}.${key}`);
  return path;
}

/** A digest mirror set beside manifest.json, as the native `imageDigestMirrors`. */
export function mirrorsFromFile(name: string, doc: unknown): { mirrors?: unknown[]; finding?: Finding } {
  // image-digest-mirror-set.json is an ImageDigestMirrorSet; image-digest-sources.json a bare list of sources
  const list = Array.isArray(doc)
    ? doc
    : (doc as { spec?: { imageDigestMirrors?: unknown } } | null)?.spec?.imageDigestMirrors;
  if (!Array.isArray(list))
    return {
      finding: error(
        `${name}: $`,
        'expected an ImageDigestMirrorSet (spec.imageDigestMirrors) or a list of digest sources',
      ),
    };
  return { mirrors: list };
}

/**
 * The native site-config document a manifest.json becomes. Its findings name the manifest's
 * fields; an error in them means the media is refused (exit 2) before anything is validated further.
 */
export function translateSeedReconfiguration(seed: SeedReconfiguration): { document: unknown; findings: Finding[] } {
  const out: Translation = { spec: {}, findings: [] };
  if (seed.api_version !== SEED_RECONFIGURATION_VERSION)
    out.findings.push(
      error(
        at('api_version'),
        `unsupported seed reconfiguration version ${seed.api_version} (this agent reads version ${SEED_RECONFIGURATION_VERSION})`,
      ),
    );
  for (const row of FIELD_TABLE) {
    if (row.field === 'api_version') continue;
    const value = (seed as Record<string, unknown>)[row.field];
    if (isEmpty(value)) continue;
    if (row.map) row.map(value as never, out, at(row.field));
    else out.findings.push(error(firstSet(value, at(row.field)), row.note));
  }
  for (const required of ['base_domain', 'pull_secret'] as const)
    if (isEmpty(seed[required])) out.findings.push(error(at(required), 'required'));
  // LCA keeps the network as it is when no nmstate is given; so does an empty desired state here
  network(out).nmstate ??= {};
  const name = seed.hostname || seed.cluster_name || 'cluster-config';
  return {
    document: { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: out.spec },
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
