/**
 * The kube-apiserver operator, reduced to what two settings do, and the API server it runs:
 * - the client CAs (cluster-kube-apiserver-operator, release-4.14 to 4.18,
 *   pkg/operator/configobservation/apiserver/observe_apiserver.go observeUserClientCABundle: the
 *   ConfigMap spec.clientCA names is copied to openshift-kube-apiserver/user-client-ca;
 *   pkg/operator/targetconfigcontroller/targetconfigcontroller.go ManageClientCABundle, 4.18
 *   :298-320: client-ca is the union, in this order, of openshift-config/admin-kubeconfig-client-ca
 *   (the installer's, which signs admin.kubeconfig), csr-controller-ca, kube-apiserver-to-kubelet-client-ca,
 *   kube-control-plane-signer-ca, user-client-ca, kubelet-bootstrap-kubeconfig and node-system-admin-ca;
 *   library-go resourcesynccontroller CombineCABundleConfigMaps skips a missing ConfigMap or an
 *   empty ca-bundle.crt, drops expired certificates and duplicates). Of these the test cluster holds
 *   the installer's and the user's; the union is the API server's --client-ca-file. Upstream the
 *   file is hot-reloaded (client-ca is a CertConfigMap, starter.go); here the server restarts;
 * - each namedCertificate is served for its names, as --tls-sni-cert-key does.
 */
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import forge from 'node-forge';
import type { TestCluster } from '../kube/cluster.js';

/** client-go util/cert/pem.go ParseCertsPEM: the CERTIFICATE blocks of a PEM text, other blocks skipped. */
const parseCertsPem = (pem: string) =>
  forge.pem
    .decode(pem)
    .filter((block) => block.type === 'CERTIFICATE')
    .map((block) => new X509Certificate(Buffer.from(block.body, 'binary')));

/** A ConfigMap's ca-bundle.crt, or '' when the ConfigMap is missing (CombineCABundleConfigMaps skips it). */
async function bundleOf(core: CoreV1Api, namespace: string, name: string): Promise<string> {
  return core.readNamespacedConfigMap({ namespace, name }).then(
    (cm) => cm.data?.['ca-bundle.crt'] ?? '',
    (err: unknown) => {
      if ((err as { code?: number }).code === 404) return '';
      throw err;
    },
  );
}

/** CombineCABundleConfigMaps: the bundles' certificates in order, the expired and duplicates dropped. */
export function combineCaBundles(bundles: string[], now = Date.now()): string {
  const seen = new Set<string>();
  const out: X509Certificate[] = [];
  for (const cert of bundles.filter((b) => b.trim()).flatMap((b) => parseCertsPem(b))) {
    if (Date.parse(cert.validTo) < now || seen.has(cert.fingerprint256)) continue;
    seen.add(cert.fingerprint256);
    out.push(cert);
  }
  return out.map((c) => c.toString()).join('');
}

/** Restarts the API server with apiserver.config/cluster's client CA and named certificates, their files in `work`. */
export async function rollOutKubeApiServer(cluster: TestCluster, work: string): Promise<void> {
  const kc = cluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apiserver = (await kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({
    group: 'config.openshift.io',
    version: 'v1',
    plural: 'apiservers',
    name: 'cluster',
  })) as {
    spec: {
      clientCA?: { name: string };
      servingCerts?: { namedCertificates?: { names: string[]; servingCertificate: { name: string } }[] };
    };
  };
  const args: string[] = [];
  const clientCa = combineCaBundles([
    await bundleOf(core, 'openshift-config', 'admin-kubeconfig-client-ca'),
    apiserver.spec.clientCA?.name ? await bundleOf(core, 'openshift-config', apiserver.spec.clientCA.name) : '',
  ]);
  if (clientCa) {
    const file = path.join(work, 'client-ca.crt');
    writeFileSync(file, clientCa);
    args.push(`--client-ca-file=${file}`);
  }
  for (const named of apiserver.spec.servingCerts?.namedCertificates ?? []) {
    const secret = await core.readNamespacedSecret({
      namespace: 'openshift-config',
      name: named.servingCertificate.name,
    });
    const crt = path.join(work, `${named.servingCertificate.name}.crt`);
    const key = path.join(work, `${named.servingCertificate.name}.key`);
    writeFileSync(crt, Buffer.from(secret.data!['tls.crt']!, 'base64'));
    writeFileSync(key, Buffer.from(secret.data!['tls.key']!, 'base64'));
    args.push(`--tls-sni-cert-key=${crt},${key}:${named.names.join(',')}`);
  }
  await cluster.restartApiServer({ extraArgs: args });
}
