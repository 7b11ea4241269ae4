/**
 * What becomes of each field of a manifest.json, by one table of field -> field: taken into the
 * native site-config or the image-based part it has no field for (identity, kubeconfig crypto),
 * checked against the cluster, accepted as unused, or refused by name with what it would take.
 * docs/image-based-media.md renders it.
 */
import { createPrivateKey } from 'node:crypto';
import type { Finding } from '../../base/findings.js';
import { USER_CA_BUNDLE } from '../../kube/openshift.js';
import { DocumentError, parseYamlDocument } from '../yaml.js';
import { describeKey, SUPPORTED_KEY_TYPES, supportedKey } from '../../certs/key-types.js';
import { type ImageBasedSite, LB_SIGNER_SUBJECT } from './image-based.js';
import { MANIFEST_FILE, SEED_RECONFIGURATION_VERSION } from './seed-reconfiguration.js';

export type NativeSpec = Record<string, unknown>;

/** what a manifest.json becomes, as the table's rows fill it in */
export interface Translation {
  spec: NativeSpec;
  findings: Finding[];
  imageBased: ImageBasedSite;
  /** ingress_ca, until ingress_certificate_cn names its subject */
  ingressKey?: { keyPem: string; field: string };
  ingressCertificateCN?: string;
}

/**
 * What the agent does with a field: `taken` becomes a setting of the site; `checked` is compared
 * with the cluster and changes nothing when equal; `unused` is accepted and reported, never used;
 * `refused` asks for something the agent cannot do (the note says what it would take).
 */
export type FieldUse = 'taken' | 'checked' | 'unused' | 'refused';

/** One row of the table: a manifest.json field, what becomes of it, and why. */
export interface FieldRow {
  /** dotted path in manifest.json */
  field: string;
  use: FieldUse;
  /** where a taken or checked value goes: a native site-config field (`spec.…`) or the cluster object */
  native?: string;
  /** for the docs: what happens to the value (for a refused field: why, and what it would take) */
  note: string;
  /** taken and checked fields: records a non-empty value (findings name the manifest's path) */
  map?: (value: never, out: Translation, at: string) => void;
}

/** a manifest field as a finding names it */
export const at = (field: string) => `${MANIFEST_FILE}: $.${field}`;
export const error = (path: string, message: string): Finding => ({ severity: 'error', path, message });

export const network = (out: Translation): NativeSpec => (out.spec.network ??= {}) as NativeSpec;

/** RFC 4122 text form: what ClusterVersion spec.clusterID holds */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CRYPTO = 'KubeconfigCryptoRetention';
const SERVING = `${CRYPTO}.KubeAPICrypto.ServingCrypto`;
export const INGRESS = `${CRYPTO}.IngresssCrypto`;
/** the installer's admin kubeconfig client CA: the loader checks it is a CA certificate valid now */
export const ADMIN_CA_FIELD = `${CRYPTO}.KubeAPICrypto.ClientAuthCrypto.admin_ca_certificate`;

/** A PEM private key of a type certificates are signed with here; the finding never quotes it. */
function privateKey(value: string, out: Translation, path: string): string | undefined {
  let key;
  try {
    key = createPrivateKey(value);
  } catch {
    out.findings.push(error(path, 'not a PEM private key'));
    return undefined;
  }
  if (supportedKey(key)) return value;
  out.findings.push(error(path, `a ${describeKey(key)} key: a signer must be ${SUPPORTED_KEY_TYPES}`));
  return undefined;
}

const NOT_RESIGNED =
  "would re-sign every certificate of the cluster (a recert of a seed image); the factory's signer and the certificates it signed stay";

export const FIELD_TABLE: readonly FieldRow[] = [
  { field: 'api_version', use: 'checked', note: `must be ${SEED_RECONFIGURATION_VERSION}` },
  {
    field: 'base_domain',
    use: 'taken',
    native: 'spec.baseDomain',
    note: 'required',
    map: (v: string, out) => (out.spec.baseDomain = v),
  },
  {
    field: 'cluster_name',
    use: 'taken',
    native: 'spec.clusterName',
    note: 'also the site id (metadata.name) when there is no hostname',
    map: (v: string, out) => (out.spec.clusterName = v),
  },
  {
    field: 'hostname',
    use: 'taken',
    native: 'spec.hostname',
    note: "the node's static hostname (and the site id); the Kubernetes node name stays the factory's (media have no spec.nodeName)",
    map: (v: string, out) => (out.spec.hostname = v),
  },
  {
    field: 'ssh_key',
    use: 'taken',
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
    use: 'taken',
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
    use: 'taken',
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
    use: 'taken',
    native: 'spec.access.kubeadminPasswordHash',
    note: 'written into the existing kube-system/kubeadmin secret in place',
    map: (v: string, out) => (((out.spec.access ??= {}) as NativeSpec).kubeadminPasswordHash = v),
  },
  {
    field: 'machine_networks',
    use: 'taken',
    native: 'spec.network.machineNetworks',
    note: "nodeip-configuration's hint; site networks only, never the internal IP's",
    map: (v: string[], out) => (network(out).machineNetworks = v),
  },
  {
    field: 'machine_network',
    use: 'taken',
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
    use: 'taken',
    native: 'spec.proxy',
    note: 'the cluster-wide proxy; noProxy as given (the installer has added the cluster networks to it)',
    map: (v: Record<string, string>, out) =>
      (out.spec.proxy = Object.fromEntries(Object.entries(v).filter(([, value]) => value !== ''))),
  },
  {
    field: 'chrony_config',
    use: 'taken',
    native: 'spec.chronyConfig',
    note: 'the whole chrony.conf; chronyd runs with it',
    map: (v: string, out) => (out.spec.chronyConfig = v),
  },
  {
    field: 'additionalTrustBundle',
    use: 'taken',
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
    use: 'taken',
    native: 'spec.nodeLabels',
    note: "set on this node's Node; labels the agent did not set are never removed",
    map: (v: Record<string, string>, out) => (out.spec.nodeLabels = v),
  },
  {
    field: 'cluster_id',
    use: 'taken',
    native: 'ClusterVersion version spec.clusterID',
    note: 'the ID the installer generated for this site, by which the hub knows the cluster; the plan shows the change and the hub report carries it',
    map: (v: string, out, path) => {
      if (UUID.test(v)) out.imageBased.clusterID = v;
      else out.findings.push(error(path, 'not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)'));
    },
  },
  {
    field: 'infra_id',
    use: 'checked',
    native: 'Infrastructure cluster status.infrastructureName',
    note: "the infrastructure name is fixed at install time and the factory's stays; a different one is a warning naming both, recorded in the hub report",
    map: (v: string, out) => (out.imageBased.infraID = v),
  },
  {
    field: 'release_registry',
    use: 'checked',
    native: 'ClusterVersion version status.desired.image',
    note: "compared at plan with the registry of the cluster's release image: equal is nothing to do; a different one is refused (the agent does not rewrite release image references), reach the site's registry through imageDigestMirrors instead",
    map: (v: string, out) => (out.imageBased.releaseRegistry = v),
  },
  {
    field: ADMIN_CA_FIELD,
    use: 'taken',
    native: 'apiserver.config spec.clientCA (as spec.access.clientCAFile)',
    note: "the CA of the installer's admin kubeconfig client certificate becomes the site's admin client CA, and the factory's admin.kubeconfig is revoked (factoryAdminKubeconfig: revoke)",
    map: (v: string, out) => (out.imageBased.adminClientCaPem = v),
  },
  {
    field: `${SERVING}.loadbalancer_external_signer_private_key`,
    use: 'taken',
    native: 'apiserver.config spec.servingCerts.namedCertificates',
    note: "signs the API's named certificate for api.<cluster>.<domain> with the installer's kube-apiserver-lb-signer as issuer, so the installer's kubeconfig CA bundle verifies it",
    map: (v: string, out, path) => {
      const keyPem = privateKey(v, out, path);
      if (keyPem) out.imageBased.apiSigner = { subject: LB_SIGNER_SUBJECT, keyPem, field: path };
    },
  },
  {
    field: `${INGRESS}.ingress_ca`,
    use: 'taken',
    native: "IngressController default's defaultCertificate",
    note: "signs the router's default certificate (and the console, downloads and OAuth routes' certificates) with the installer's ingress-operator signer as issuer",
    map: (v: string, out, path) => {
      const keyPem = privateKey(v, out, path);
      if (keyPem) out.ingressKey = { keyPem, field: path };
    },
  },
  {
    field: `${INGRESS}.ingress_certificate_cn`,
    use: 'taken',
    native: "the router certificate's issuer",
    note: "the ingress signer's subject CN (ingress-operator@<unix time>): the issuer of the certificates ingress_ca signs; required with ingress_ca",
    map: (v: string, out) => (out.ingressCertificateCN = v),
  },
  {
    field: `${SERVING}.localhost_signer_private_key`,
    use: 'unused',
    note: `the kube-apiserver's localhost serving signer: using it ${NOT_RESIGNED}`,
  },
  {
    field: `${SERVING}.service_network_signer_private_key`,
    use: 'unused',
    note: `the kube-apiserver's service-network serving signer: using it ${NOT_RESIGNED}`,
  },
  {
    field: 'server_ssh_keys',
    use: 'refused',
    note: 'refused: the node keeps its SSH host keys; replacing them takes writing /etc/ssh and restarting sshd, which the agent does not do (the installer never writes this field)',
  },
  {
    field: 'node_ip',
    use: 'refused',
    note: 'refused: the node IP is the internal IP on br-ex, fixed at the factory; give the site address in raw_nm_state_config instead',
  },
  {
    field: 'node_ips',
    use: 'taken',
    native: 'spec.network.internalIP',
    note: "kubelet's node IPs: the internal IP on br-ex, one per family for dual-stack, the cluster's primary family first; each with its prefix length (e.g. 192.168.127.10/24), as the factory pinned it",
    map: (v: string[], out, path) => {
      const bare = v.findIndex((ip) => !ip.includes('/'));
      if (bare >= 0)
        out.findings.push(
          error(`${path}[${bare}]`, 'needs its prefix length: the internal IP on br-ex, as the factory pinned it'),
        );
      else network(out).internalIP = v.length === 1 ? v[0] : v;
    },
  },
  {
    field: 'status_proxy',
    use: 'refused',
    note: 'refused: an image-based upgrade field (the installer never writes it); sno-relocate does not upgrade, use proxy',
  },
  {
    field: 'install_config',
    use: 'refused',
    note: 'refused: an image-based upgrade field (the installer never writes it); sno-relocate does not upgrade, use the native fields',
  },
];
