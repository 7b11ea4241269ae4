/** The site-config as the steps see it: validated, with every named file read in. */
import type { DockerConfig, Mirror, SiteConfigV1, Workload } from './v1/schema.js';
import type { NmstateState } from '../base/nmstate.js';
import type { Finding } from '../base/findings.js';
import type { TimeMark } from '../base/true-time.js';
import type { ExtraManifest } from './extra-manifests.js';
import type { ImageBasedSite } from './ibi/image-based.js';

export interface CertificatePair {
  certPem: string;
  keyPem: string;
}

export interface SiteFile {
  /** name relative to the site-config folder */
  name: string;
  sha256: string;
}

export interface Site {
  name: string;
  baseDomain: string;
  clusterName?: string;
  hostname?: string;
  /** the Kubernetes node name: kept (absent, the default) or renamed to the hostname */
  nodeName?: 'keep' | 'rename';
  network: {
    nmstate: NmstateState;
    /** the internal IP on br-ex; dual-stack: the cluster's primary family's */
    internalIP?: string;
    /** dual-stack: the internal IP of the other family, after internalIP */
    secondaryInternalIP?: string;
    /** the site's machine networks (CIDRs), nodeip-configuration's hint; empty: no hint */
    machineNetworks: string[];
    verify: { pingGateway: boolean; resolve: string[]; timeoutSeconds: number };
  };
  pullSecret?: DockerConfig;
  pullSecretPolicy: 'replace' | 'merge';
  imageDigestMirrors: Mirror[];
  imageTagMirrors: Mirror[];
  /** `skip`: the site's registries are not checked before the pull secret and mirrors change (absent: checked) */
  registryCheck?: 'skip';
  certificates: { ingress?: CertificatePair; api?: CertificatePair };
  sshAuthorizedKeys: string[];
  /** the node's chrony.conf (absent: the factory's NTP configuration stays) */
  chronyConfig?: string;
  /** the cluster-wide proxy (absent: the cluster's proxy stays as it is) */
  proxy?: SiteProxy;
  /** openshift-config/user-ca-bundle (absent: the cluster's trust bundle stays as it is) */
  trustBundle?: TrustBundle;
  /** labels for this node's Node object */
  nodeLabels: Record<string, string>;
  /** who can log in at the site (absent: the factory's credentials stay) */
  access?: SiteAccess;
  /** what must be ready before the site counts as in service (absent: a healthy cluster is enough) */
  inService?: InService;
  /** objects applied at the site, in name order (extra-manifests/) */
  extraManifests: ExtraManifest[];
  /** what an image-based install's config media adds: identity and the installer's signers (absent: native) */
  imageBased?: ImageBasedSite;
}

export interface SiteAccess {
  /** PEM certificates of the site's admin client CA */
  clientCaPem?: string;
  /** bcrypt hash for kube-system/kubeadmin */
  kubeadminPasswordHash?: string;
  /** the CA that signs the API and apps serving certificates, instead of one generated on the node */
  siteCa?: CertificatePair;
  /**
   * The factory's admin.kubeconfig at the site: `revoke` takes the installer's admin CA out of the
   * API server's client-CA bundle; `keep` (only when the site-config says so) puts a revoked one
   * back; absent, it stays as it is.
   */
  factoryAdminKubeconfig?: 'keep' | 'revoke';
}

export interface SiteProxy {
  httpProxy?: string;
  httpsProxy?: string;
  noProxy?: string;
}

export interface TrustBundle {
  /** PEM certificates */
  caBundlePem: string;
  /** whether proxy.config's spec.trustedCA names the bundle */
  proxyTrustedCA: boolean;
}

export interface InService {
  workloads: Workload[];
  probe?: { url: string; insecure: boolean };
  timeoutSeconds: number;
}

export interface LoadedSite {
  /** path of the site-config file that was read */
  file: string;
  dir: string;
  /** a native site-config, or an image-based install's config media (manifest.json) translated into one */
  media: 'native' | 'ibi';
  /** the native site-config (for media, the one it was translated into) */
  document: SiteConfigV1;
  site: Site;
  /** the site-config and every file it names, with their digests (what a signature covers) */
  files: SiteFile[];
  /** warnings (errors are thrown) */
  findings: Finding[];
  /** errors of time alone, deferred on a clock not yet synchronised: judged again by the clock step */
  deferred?: Finding[];
  /** fields sealed to a node's key that this machine could not open (it has no node key) */
  sealed?: { node: string; fields: string[] };
  /** fields sealed to this node's key and opened in memory */
  opened?: string[];
  /** what says the true time is at least some instant (the signature's signing time, ...) */
  timeMarks?: TimeMark[];
}

/** Every internal IP of the site, the primary family's first (empty: the site-config sets none). */
export function internalIPs(network: Pick<Site['network'], 'internalIP' | 'secondaryInternalIP'>): string[] {
  return [network.internalIP, network.secondaryInternalIP].filter((ip): ip is string => ip !== undefined);
}
