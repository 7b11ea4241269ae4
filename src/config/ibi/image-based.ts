/**
 * What an image-based install's config media asks beyond the native site-config: the identity the
 * installer generated for this site (cluster ID, infrastructure name, the seed's release registry)
 * and the installer's kubeconfig crypto (KubeconfigCryptoRetention), so that the admin kubeconfig
 * it wrote beside the media works against the relocated cluster. The signer keys in here are never
 * logged, stored in the state file, shown in status or published in the hub report: they go only
 * into the certificates the domain step signs with them.
 */
/** The subject of an installer signer's certificate: what the certificates it signs name as their issuer. */
export interface SignerSubject {
  commonName: string;
  organizationalUnit?: string;
}

/** One of the installer's signers: its private key, and the subject its certificate carries. */
export interface InstallerSigner {
  subject: SignerSubject;
  /** PEM private key (the installer's: RSA 2048) */
  keyPem: string;
  /** the manifest.json field the key came from */
  field: string;
}

export interface ImageBasedSite {
  /** becomes ClusterVersion spec.clusterID: the hub knows the cluster by it */
  clusterID?: string;
  /** compared with the cluster's infrastructure name, which stays the factory's */
  infraID?: string;
  /** compared with the registry of the cluster's release image */
  releaseRegistry?: string;
  /** signs the API's named certificate for api.<cluster>.<domain> */
  apiSigner?: InstallerSigner;
  /** signs the router's default certificate and the component routes' certificates */
  ingressSigner?: InstallerSigner;
  /** the installer's admin kubeconfig client CA (PEM): becomes the site's admin client CA */
  adminClientCaPem?: string;
  /** manifest.json fields accepted but not used, with why */
  unused: { field: string; reason: string }[];
  /** every manifest.json field the media gave (a non-empty value), in the translation table's order */
  given: string[];
}

/** kube-apiserver-lb-signer, as the installer makes it (pkg/asset/tls/apiserver.go, KubeAPIServerLBSignerCertKey) */
export const LB_SIGNER_SUBJECT: SignerSubject = {
  commonName: 'kube-apiserver-lb-signer',
  organizationalUnit: 'openshift',
};
