/**
 * Certificate signing requests as kubelets send them: real PKCS#10 requests (node-forge), created
 * through the API as the node-bootstrapper service account or as the node itself.
 */
import { generateKeyPairSync } from 'node:crypto';
import {
  CertificatesV1Api,
  createConfiguration,
  type KubeConfig,
  type RequestContext,
  ServerConfiguration,
} from '@kubernetes/client-node';
import forge from 'node-forge';

export const MACHINE_CONFIG_OPERATOR_NS = 'openshift-machine-config-operator';
export const NODE_BOOTSTRAPPER = `system:serviceaccount:${MACHINE_CONFIG_OPERATOR_NS}:node-bootstrapper`;
export const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
export const KUBELET_CLIENT_USAGES = ['digital signature', 'key encipherment', 'client auth'];
export const KUBELET_SERVING_USAGES = ['digital signature', 'key encipherment', 'server auth'];

/** One RSA key per process, made by node's native crypto (node-forge's own takes seconds). */
let cachedKey: { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey } | undefined;
export function testKey(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey } {
  if (!cachedKey) {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const priv = forge.pki.privateKeyFromPem(
      privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    ) as forge.pki.rsa.PrivateKey;
    cachedKey = { privateKey: priv, publicKey: forge.pki.setRsaPublicKey(priv.n, priv.e) };
  }
  return cachedKey;
}

export interface CsrRequest {
  commonName: string;
  organization?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
}

const csrCache = new Map<string, string>();

/** A real PKCS#10 request (PEM), as the kubelet sends one: subject, and SANs for serving requests. */
export function makeCsrPem(req: CsrRequest): string {
  const key = JSON.stringify(req);
  const hit = csrCache.get(key);
  if (hit) return hit;
  const { privateKey, publicKey } = testKey();
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = publicKey;
  csr.setSubject([
    ...(req.organization ?? []).map((value) => ({ name: 'organizationName', value })),
    { name: 'commonName', value: req.commonName },
  ]);
  const altNames = [
    ...(req.dnsNames ?? []).map((value) => ({ type: 2, value })),
    ...(req.ipAddresses ?? []).map((ip) => ({ type: 7, ip })),
  ];
  if (altNames.length > 0) {
    csr.setAttributes([{ name: 'extensionRequest', extensions: [{ name: 'subjectAltName', altNames }] }]);
  }
  csr.sign(privateKey, forge.md.sha256.create());
  const pem = forge.pki.certificationRequestToPem(csr);
  csrCache.set(key, pem);
  return pem;
}

export interface CsrSpec {
  name: string;
  signerName: string;
  usages: string[];
  request: CsrRequest;
  /**
   * Who sends it: the node-bootstrapper service account (client) or the node itself (serving). The
   * API server adds system:authenticated, and a service account's own groups, to an impersonated user.
   */
  as: { user: string; group?: string };
}

/**
 * Creates one pending CSR as `spec.as` (Impersonate-User / Impersonate-Group), so that the API
 * server records that requester in spec.username and spec.groups as it would for a kubelet.
 * Returns its name.
 */
export async function createCsr(kc: KubeConfig, spec: CsrSpec): Promise<string> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const impersonating = {
    getName: () => 'impersonation',
    async applySecurityAuthentication(context: RequestContext) {
      await kc.applySecurityAuthentication(context);
      context.setHeaderParam('Impersonate-User', spec.as.user);
      if (spec.as.group) context.setHeaderParam('Impersonate-Group', spec.as.group);
    },
  };
  const api = new CertificatesV1Api(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: impersonating },
    }),
  );
  const made = await api.createCertificateSigningRequest({
    body: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name: spec.name },
      spec: {
        request: Buffer.from(makeCsrPem(spec.request)).toString('base64'),
        signerName: spec.signerName,
        usages: spec.usages,
      },
    },
  });
  return made.metadata!.name!;
}

/** The CSRs a kubelet sends for `nodeName`: a client one (via the bootstrapper) and a serving one (as the node). */
export function kubeletCsrSpecs(
  nodeName: string,
  nodeIP: string,
  suffix: string,
): { client: CsrSpec; serving: CsrSpec } {
  return {
    client: {
      name: `csr-client-${nodeName}-${suffix}`,
      signerName: KUBELET_CLIENT_SIGNER,
      usages: KUBELET_CLIENT_USAGES,
      request: { commonName: `system:node:${nodeName}`, organization: ['system:nodes'] },
      as: { user: NODE_BOOTSTRAPPER },
    },
    serving: {
      name: `csr-serving-${nodeName}-${suffix}`,
      signerName: KUBELET_SERVING_SIGNER,
      usages: KUBELET_SERVING_USAGES,
      request: {
        commonName: `system:node:${nodeName}`,
        organization: ['system:nodes'],
        dnsNames: [nodeName],
        ipAddresses: [nodeIP],
      },
      as: { user: `system:node:${nodeName}`, group: 'system:nodes' },
    },
  };
}

/** The spec of a kubelet client request filed as the node-bootstrapper, with the groups the API server records. */
export const bootstrapperClientSpec = (request: string) => ({
  request,
  signerName: KUBELET_CLIENT_SIGNER,
  usages: ['digital signature', 'client auth'],
  username: NODE_BOOTSTRAPPER,
  groups: [`system:serviceaccounts:${MACHINE_CONFIG_OPERATOR_NS}`, 'system:serviceaccounts', 'system:authenticated'],
});
