/**
 * The kube-apiserver operator, reduced to what two settings do (cluster-kube-apiserver-operator
 * pkg/operator/configobservation/apiserver/observe_apiserver.go: spec.clientCA's ConfigMap is
 * copied to user-client-ca and merged into client-ca, the --client-ca-file; each namedCertificate
 * is served for its names, as --tls-sni-cert-key does): reads apiserver.config/cluster and rolls
 * out a kube-apiserver with them.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { TestCluster } from '../kube/cluster.js';

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
  if (apiserver.spec.clientCA?.name) {
    const cm = await core.readNamespacedConfigMap({
      namespace: 'openshift-config',
      name: apiserver.spec.clientCA.name,
    });
    const file = path.join(work, 'client-ca.crt');
    writeFileSync(file, cm.data!['ca-bundle.crt']!);
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
