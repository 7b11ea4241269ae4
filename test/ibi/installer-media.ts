/**
 * Config media as `openshift-install image-based create config-image` writes it, and the admin
 * kubeconfig it writes beside the media, field for field from the installer's Go source
 * (openshift/installer, read at the commits named):
 *
 * - pkg/asset/imagebased/configimage/clusterconfiguration.go @ 24f437226ca7e953ecb277ca354f709499085a13:
 *   manifest.json is json.Marshal of SeedReconfiguration with api_version 1, base_domain,
 *   cluster_id, cluster_name, hostname, infra_id, kubeadmin_password_hash, proxy (omitted when
 *   nil), pull_secret, release_registry, ssh_key, node_labels, raw_nm_state_config, chrony_config
 *   (defaultChronyConf plus a `server <source> iburst` line per additional NTP source),
 *   additionalTrustBundle (proxyConfigmapName user-ca-bundle when the policy is Always, or
 *   Proxyonly with a proxy), KubeconfigCryptoRetention (LB, localhost and service-network signer
 *   keys, the admin-kubeconfig signer's certificate, the ingress-operator signer's key and its
 *   certificate's CN) and machine_networks;
 * - pkg/types/imagebased/seedreconfiguration.go @ 095bcd995a910082b814207347df7e9eba25e8f6: the
 *   struct's field order (Go writes fields in declaration order), `omitempty` on every string, no
 *   tag on KubeconfigCryptoRetention (its Go field names are the keys, always written), and
 *   additionalTrustBundle a struct, so written even when empty;
 * - pkg/asset/imagebased/configimage/clusterid.go @ 58bbbe29726607b3ff265b994c56d7d29c1bab1a:
 *   cluster_id a random UUID, infra_id `<cluster name>-<5 random lowercase letters or digits>`;
 * - pkg/asset/imagebased/configimage/imagedigestmirrorset.go @ c38521c28b9dd8b595f647129bed2317a2b93604:
 *   cluster-configuration/manifests/image-digest-mirror-set.json, an ImageDigestMirrorSet named
 *   image-digest-mirror, when install-config has imageDigestSources;
 * - pkg/asset/tls/tls.go @ 0aefefe782cf45ecd9377b91d5b9f03cc0dd057f: RSA 2048 keys, PKCS#1 PEM;
 *   self-signed signers with basicConstraints CA, the subject key ID the SHA-1 of the PKCS#1
 *   public key, and a signed certificate's notBefore the CA's;
 * - pkg/asset/tls/apiserver.go @ 04918c54a29c7904ebd8750225d6d854a27e9e21 and
 *   pkg/asset/tls/adminkubeconfig.go @ 0be3dfc7f6c6444d17d2edb86e2c52e9d008f9d7: the signers
 *   `OU=openshift, CN=kube-apiserver-{lb,localhost,service-network}-signer` and
 *   `OU=openshift, CN=admin-kubeconfig-signer` (ten years), the admin client certificate
 *   `O=system:masters, CN=system:admin` (server and client auth, ten years);
 * - pkg/asset/imagebased/configimage/ingressoperatorsigner.go @ 15a264733aae713d05c2cdc1c6e86f7781d00f4f:
 *   the ingress signer `CN=ingress-operator@<unix time>`, no OU, two years;
 * - pkg/asset/imagebased/configimage/cabundle.go @ b7c2fcc5ea8b89c91103d967c5f2f1f8f4efc646 and
 *   pkg/asset/kubeconfig/imagebased.go @ 8b7d5c6fe26a70eafc47a142666b90ed6081159e: auth/kubeconfig,
 *   user admin, its CA data the localhost, service-network, LB and ingress signers' certificates
 *   in that order, the server https://api.<cluster>.<domain>:6443 (pkg/asset/kubeconfig/admin.go).
 *
 * Names are encoded as Go's crypto/x509/pkix does: OU before CN, a PrintableString when every
 * character allows it, else a UTF8String. Keys come from node:crypto, certificates from node-forge.
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import forge from 'node-forge';

const YEAR_MS = 365 * 86_400_000;
const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

export interface InstallerInput {
  clusterName: string;
  baseDomain: string;
  hostname: string;
  pullSecret: object;
  sshKey: string;
  machineNetwork: string;
  /** nmstate for networkConfig (image-based-config.yaml) */
  networkConfig?: object;
  /** image-based-config.yaml releaseRegistry */
  releaseRegistry?: string;
  additionalNTPSources?: string[];
  imageDigestSources?: { source: string; mirrors: string[] }[];
  /** bcrypt hash of the generated kubeadmin password */
  kubeadminPasswordHash: string;
  /** install-config proxy (the installer has added the cluster networks to noProxy) */
  proxy?: { httpProxy?: string; httpsProxy?: string; noProxy?: string };
  /** install-config additionalTrustBundle and additionalTrustBundlePolicy */
  additionalTrustBundle?: { pem: string; policy: 'Proxyonly' | 'Always' };
  /** image-based-config.yaml nodeLabels */
  nodeLabels?: Record<string, string>;
}

export interface Signer {
  certPem: string;
  keyPem: string;
  cert: forge.pki.Certificate;
  key: forge.pki.rsa.PrivateKey;
}

export interface InstallerOutput {
  /** the ISO's root: cluster-configuration/… */
  mediaDir: string;
  /** auth/kubeconfig in the installer's working folder */
  kubeconfigPath: string;
  manifest: Record<string, unknown>;
  signers: { lb: Signer; localhost: Signer; serviceNetwork: Signer; adminKubeconfig: Signer; ingress: Signer };
  /** the CA data of the kubeconfig (PEM) */
  caBundlePem: string;
  clusterId: string;
  infraId: string;
}

/** A Go pkix.Name attribute: PrintableString when Go would choose it, else UTF8String. */
const attr = (name: 'commonName' | 'organizationName' | 'organizationalUnitName', value: string) => ({
  name,
  value,
  valueTagClass: (PRINTABLE.test(value) ? forge.asn1.Type.PRINTABLESTRING : forge.asn1.Type.UTF8) as number,
});

/** rand.Int(rand.Reader, MaxInt64): a positive serial below 2^63 */
function serial(): string {
  const bytes = randomBytes(8);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

function rsaKey(): { key: forge.pki.rsa.PrivateKey; pem: string } {
  const pem = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs1', format: 'pem' })
    .toString();
  return { key: forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey, pem };
}

const keyId = (cert: forge.pki.Certificate): string => cert.generateSubjectKeyIdentifier().getBytes();

function selfSigned(subject: ReturnType<typeof attr>[], validityMs: number): Signer {
  const { key, pem } = rsaKey();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = serial();
  const now = new Date();
  cert.validity.notBefore = now;
  cert.validity.notAfter = new Date(now.getTime() + validityMs);
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'keyUsage', critical: true, digitalSignature: true, keyEncipherment: true, keyCertSign: true },
    { name: 'basicConstraints', critical: true, cA: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(key, forge.md.sha256.create());
  return { cert, key, certPem: forge.pki.certificateToPem(cert), keyPem: pem };
}

/** tls.SignedCertificate: notBefore the CA's, key usage, SKID, and the CA's SKID as AKID (x509.CreateCertificate) */
function signedBy(ca: Signer, subject: ReturnType<typeof attr>[], validityMs: number): Signer {
  const { key, pem } = rsaKey();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = serial();
  cert.validity.notBefore = ca.cert.validity.notBefore;
  cert.validity.notAfter = new Date(Date.now() + validityMs);
  cert.setSubject(subject);
  cert.setIssuer(ca.cert.subject.attributes);
  cert.setExtensions([
    { name: 'keyUsage', critical: true, digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    { name: 'basicConstraints', critical: true, cA: false },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: keyId(ca.cert) },
  ]);
  cert.sign(ca.key, forge.md.sha256.create());
  return { cert, key, certPem: forge.pki.certificateToPem(cert), keyPem: pem };
}

/** clusterid.go generateInfraID: the name's non-alphanumerics as dashes, cut to 21, dash, 5 random characters */
function infraIdFor(name: string): string {
  const base = name
    .replace(/[^A-Za-z0-9-]/g, '-')
    .replace(/-{2,}/g, '-')
    .slice(0, 21)
    .replace(/-+$/, '');
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789'; // k8s.io/apimachinery util/rand's alphanums
  return `${base}-${[...randomBytes(5)].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

/** Go's encoding/json escapes <, > and & (HTMLEscape) in every string */
const goJson = (value: unknown): string =>
  JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

const DEFAULT_CHRONY_CONF = `
pool 0.rhel.pool.ntp.org iburst
driftfile /var/lib/chrony/drift
makestep 1.0 3
rtcsync
logdir /var/log/chrony`;

/** Writes the media under `workDir/media` and the installer's auth/kubeconfig under `workDir/auth`. */
export function writeInstallerMedia(workDir: string, input: InstallerInput): InstallerOutput {
  const ou = attr('organizationalUnitName', 'openshift');
  const tenYears = 10 * YEAR_MS;
  const signers = {
    lb: selfSigned([ou, attr('commonName', 'kube-apiserver-lb-signer')], tenYears),
    localhost: selfSigned([ou, attr('commonName', 'kube-apiserver-localhost-signer')], tenYears),
    serviceNetwork: selfSigned([ou, attr('commonName', 'kube-apiserver-service-network-signer')], tenYears),
    adminKubeconfig: selfSigned([ou, attr('commonName', 'admin-kubeconfig-signer')], tenYears),
    ingress: selfSigned([attr('commonName', `ingress-operator@${Math.floor(Date.now() / 1000)}`)], 2 * YEAR_MS),
  };
  const admin = signedBy(
    signers.adminKubeconfig,
    [attr('organizationName', 'system:masters'), attr('commonName', 'system:admin')],
    tenYears,
  );
  const clusterId = randomUUID();
  const infraId = infraIdFor(input.clusterName);

  // field order of pkg/types/imagebased/seedreconfiguration.go; empty strings and nil values omitted
  // clusterconfiguration.go: the bundle's ConfigMap is named for the proxy when the policy is
  // Always, or Proxyonly with a proxy (user-ca-bundle, holding the same bundle)
  const bundle = input.additionalTrustBundle;
  const proxyConfigmap = bundle && (bundle.policy === 'Always' || input.proxy !== undefined);
  const manifest: Record<string, unknown> = {
    additionalTrustBundle: {
      userCaBundle: bundle?.pem ?? '',
      proxyConfigmapName: proxyConfigmap ? 'user-ca-bundle' : '',
      proxyConfigmapBundle: proxyConfigmap ? bundle.pem : '',
    },
    api_version: 1,
    base_domain: input.baseDomain,
    cluster_id: clusterId,
    cluster_name: input.clusterName,
    ...(input.additionalNTPSources?.length && {
      chrony_config: DEFAULT_CHRONY_CONF + input.additionalNTPSources.map((s) => `\nserver ${s} iburst`).join(''),
    }),
    hostname: input.hostname,
    infra_id: infraId,
    kubeadmin_password_hash: input.kubeadminPasswordHash,
    KubeconfigCryptoRetention: {
      KubeAPICrypto: {
        ServingCrypto: {
          localhost_signer_private_key: signers.localhost.keyPem,
          service_network_signer_private_key: signers.serviceNetwork.keyPem,
          loadbalancer_external_signer_private_key: signers.lb.keyPem,
        },
        ClientAuthCrypto: { admin_ca_certificate: signers.adminKubeconfig.certPem },
      },
      IngresssCrypto: {
        ingress_ca: signers.ingress.keyPem,
        ingress_certificate_cn: signers.ingress.cert.subject.getField('CN').value as string,
      },
    },
    machine_networks: [input.machineNetwork],
    ...(input.nodeLabels && { node_labels: input.nodeLabels }),
    ...(input.networkConfig && { raw_nm_state_config: yaml.dump(input.networkConfig) }),
    ...(input.releaseRegistry && { release_registry: input.releaseRegistry }),
    ssh_key: input.sshKey,
    pull_secret: JSON.stringify(input.pullSecret),
    ...(input.proxy && { proxy: input.proxy }),
  };
  const mediaDir = path.join(workDir, 'media');
  mkdirSync(path.join(mediaDir, 'cluster-configuration/manifests'), { recursive: true });
  writeFileSync(path.join(mediaDir, 'cluster-configuration/manifest.json'), goJson(manifest));
  if (input.imageDigestSources)
    writeFileSync(
      path.join(mediaDir, 'cluster-configuration/manifests/image-digest-mirror-set.json'),
      goJson({
        kind: 'ImageDigestMirrorSet',
        apiVersion: 'config.openshift.io/v1',
        metadata: { name: 'image-digest-mirror', creationTimestamp: null },
        spec: { imageDigestMirrors: input.imageDigestSources },
        status: {},
      }),
    );

  const caBundlePem = [signers.localhost, signers.serviceNetwork, signers.lb, signers.ingress]
    .map((s) => s.certPem)
    .join('');
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  const kubeconfig = {
    clusters: [
      {
        cluster: {
          'certificate-authority-data': b64(caBundlePem),
          server: `https://api.${input.clusterName}.${input.baseDomain}:6443`,
        },
        name: input.clusterName,
      },
    ],
    contexts: [{ context: { cluster: input.clusterName, user: 'admin' }, name: 'admin' }],
    'current-context': 'admin',
    preferences: {},
    users: [
      {
        name: 'admin',
        user: { 'client-certificate-data': b64(admin.certPem), 'client-key-data': b64(admin.keyPem) },
      },
    ],
  };
  const kubeconfigPath = path.join(workDir, 'auth/kubeconfig');
  mkdirSync(path.dirname(kubeconfigPath), { recursive: true });
  writeFileSync(kubeconfigPath, yaml.dump(kubeconfig), { mode: 0o600 });
  return { mediaDir, kubeconfigPath, manifest, signers, caBundlePem, clusterId, infraId };
}
