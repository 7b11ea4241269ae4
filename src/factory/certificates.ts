/**
 * Which certificates will have expired when the node arrives, `shelfDays` from now, and what
 * happens to each then (openshift-behaviours.md §8):
 *
 *   - kubelet's client and serving certificates (/var/lib/kubelet/pki, 30 days): kubelet asks for
 *     new ones at start, and the agent's csr-approval step approves them;
 *   - the kube-apiserver's 30-day certificates and their signers: the API server's static pod runs
 *     kube-apiserver-cert-regeneration-controller, which regenerates expired ones at start
 *     (cluster-kube-apiserver-operator pkg/operator/certrotationcontroller/certrotationcontroller.go,
 *     NewCertRotationControllerOnlyWhenExpired);
 *   - anything else that expires before arrival needs a person: the node is not fit to ship.
 *
 * Read from the node's files (under --root) and from every TLS secret of the cluster.
 */
import { certificatesIn } from '../base/pem.js';
import type { RootFs } from '../ports/fs.js';
import type { Kube, KubeObject } from '../ports/kube.js';

const DAY_MS = 86_400_000;

export type Fate = 'valid' | 'agent approves renewal' | 'regenerated at start' | 'needs a person';

export interface CertificateReport {
  /** a node file, or `Secret namespace/name` */
  source: string;
  subject: string;
  notAfter: string;
  /** expired before the node arrives */
  expiredOnArrival: boolean;
  fate: Fate;
}

/** kubelet's current certificates: the agent approves the CSRs for their successors. */
export const KUBELET_FILES = [
  '/var/lib/kubelet/pki/kubelet-client-current.pem',
  '/var/lib/kubelet/pki/kubelet-server-current.pem',
] as const;

const KASO_NAMESPACE = 'openshift-kube-apiserver-operator';
const KAS_NAMESPACE = 'openshift-kube-apiserver';
/** the secrets the kube-apiserver's cert-regeneration controller regenerates once expired */
export const REGENERATED_AT_START: readonly string[] = [
  ...['aggregator-client-signer', 'kube-apiserver-to-kubelet-signer', 'localhost-serving-signer'].map(
    (n) => `${KASO_NAMESPACE}/${n}`,
  ),
  ...['service-network-serving-signer', 'loadbalancer-serving-signer'].map((n) => `${KASO_NAMESPACE}/${n}`),
  ...[
    'aggregator-client',
    'kubelet-client',
    'localhost-serving-cert-certkey',
    'service-network-serving-certkey',
    'external-loadbalancer-serving-certkey',
    'internal-loadbalancer-serving-certkey',
  ].map((n) => `${KAS_NAMESPACE}/${n}`),
];

function report(source: string, pem: string, arrival: Date, whenExpired: Fate): CertificateReport | undefined {
  let leaf;
  try {
    [leaf] = certificatesIn(pem);
  } catch {
    // a certificate nobody can read renews nothing: a person has to look at it
    return {
      source,
      subject: '(not a readable certificate)',
      notAfter: '',
      expiredOnArrival: true,
      fate: 'needs a person',
    };
  }
  if (!leaf) return undefined;
  const notAfter = new Date(leaf.validTo);
  const expiredOnArrival = notAfter.getTime() <= arrival.getTime();
  return {
    source,
    subject: leaf.subject.replace(/\n/g, ', '),
    notAfter: notAfter.toISOString(),
    expiredOnArrival,
    fate: expiredOnArrival ? whenExpired : 'valid',
  };
}

interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

export async function certificateReports(
  fs: RootFs,
  kube: Kube,
  now: Date,
  shelfDays: number,
): Promise<CertificateReport[]> {
  const arrival = new Date(now.getTime() + shelfDays * DAY_MS);
  const out: CertificateReport[] = [];
  for (const file of KUBELET_FILES) {
    const pem = await fs.readText(file);
    const r = pem && report(file, pem, arrival, 'agent approves renewal');
    if (r) out.push(r);
  }
  const secrets = await kube.list<Secret>('v1', 'Secret');
  for (const s of secrets.filter((x) => x.type === 'kubernetes.io/tls' && x.data?.['tls.crt'])) {
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    const fate: Fate = REGENERATED_AT_START.includes(key) ? 'regenerated at start' : 'needs a person';
    const r = report(`Secret ${key}`, Buffer.from(s.data!['tls.crt']!, 'base64').toString('utf8'), arrival, fate);
    if (r) out.push(r);
  }
  return out;
}
