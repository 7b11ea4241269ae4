/**
 * The kube-apiserver's serving certificate as a client at the site is given it, by SNI, on port
 * 6443 of the address the site's API name resolves to:
 * - the kube-apiserver operator turns apiserver.config spec.servingCerts.namedCertificates into the
 *   kube-apiserver's named certificates, each secret from openshift-config
 *   (cluster-kube-apiserver-operator release-4.18 pkg/operator/configobservation/apiserver/observe_apiserver.go);
 * - the kube-apiserver picks the named certificate whose names match the client's SNI, else its
 *   default serving certificate (kubernetes staging/src/k8s.io/apiserver, in
 *   pkg/server/dynamiccertificates/named_certificates.go).
 * The named certificate is served as soon as apiserver.config names it: the revision that takes it
 * in is the rollout models' business, not this one's. The default here is a certificate of the
 * kube-apiserver's own signer for the names it serves at the factory.
 */
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { opensslCa, opensslServing } from '../../helpers/openssl.js';

interface NamedCertificate {
  names?: string[];
  servingCertificate: { name: string };
}

export interface ApiServing {
  close(): Promise<void>;
}

export async function startApiServing(kc: KubeConfig, address: string, port = 6443): Promise<ApiServing> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const dir = mkdtempSync(path.join(tmpdir(), 'apiserver-sni-'));
  const own = opensslServing(
    dir,
    'kube-apiserver',
    opensslCa(dir, 'kube-apiserver-localhost-signer'),
    'DNS:api.sno.factory.example.com,DNS:localhost',
  );
  const fallback = tls.createSecureContext({ cert: readFileSync(own.crt), key: readFileSync(own.key) });

  async function contextFor(name: string): Promise<tls.SecureContext> {
    const config = (await custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'apiservers',
      name: 'cluster',
    })) as { spec?: { servingCerts?: { namedCertificates?: NamedCertificate[] } } };
    const named = config.spec?.servingCerts?.namedCertificates?.find((c) => c.names?.includes(name));
    if (!named) return fallback;
    const secret = await core.readNamespacedSecret({
      namespace: 'openshift-config',
      name: named.servingCertificate.name,
    });
    const field = (k: string) => Buffer.from(secret.data?.[k] ?? '', 'base64');
    return tls.createSecureContext({ cert: field('tls.crt'), key: field('tls.key') });
  }

  const server = tls.createServer({
    SNICallback: (name, cb) =>
      void contextFor(name).then(
        (context) => cb(null, context),
        (err: Error) => cb(err),
      ),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, resolve);
  });
  return {
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
