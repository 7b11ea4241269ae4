/**
 * Which certificates will have expired when the node arrives, `shelfDays` from now, and what
 * happens to each then (openshift-behaviours.md §8, "Kubelet certificates after long power-off"):
 *
 *   - kubelet's client and serving certificates (/var/lib/kubelet/pki, 720 h), and a client
 *     certificate embedded in kubelet's kubeconfig: kubelet re-bootstraps or asks for a renewal at
 *     start, the machine approver approves neither on a single node, and the agent's csr-approval
 *     step does;
 *   - the kube-apiserver's 30-day certificates and their signers, as secrets of the operator's and
 *     the API server's namespaces, and as the files the API server serves from
 *     (/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/<name>/tls.crt, which its
 *     kube-apiserver-cert-syncer container keeps in step with those secrets): the static pod's
 *     kube-apiserver-cert-regeneration-controller regenerates expired ones at start
 *     (cluster-kube-apiserver-operator bindata/assets/kube-apiserver/pod.yaml,
 *     NewCertRotationControllerOnlyWhenExpired), and the cert syncer writes them out;
 *   - anything else that expires before arrival needs a person, and the node is not fit to ship:
 *     kubelet's bootstrap credential in /etc/kubernetes/kubeconfig (10 years, signed by the
 *     installer's kubelet-bootstrap-kubeconfig-signer, which nothing on the cluster renews: without
 *     it kubelet cannot re-bootstrap), etcd's and the other static pods' certificates, and every
 *     other TLS secret.
 *
 * Read from the node's files (under --root) and from every TLS secret of the cluster. A source
 * that cannot be read (a file that is not a certificate, secrets the API will not list) is named
 * in `unreadable`: a check that could not look does not pass.
 */
import path from 'node:path';
import { certificatesIn } from '../base/pem.js';
import { errorMessage } from '../base/errors.js';
import { parseYamlDocument } from '../config/yaml.js';
import type { RootFs } from '../ports/fs.js';
import type { Kube, KubeObject } from '../ports/kube.js';

const DAY_MS = 86_400_000;

export type Fate = 'valid' | 'agent approves renewal' | 'regenerated at start' | 'needs a person';

export interface CertificateReport {
  /** a node file (with the kubeconfig user it is embedded for), or `Secret namespace/name` */
  source: string;
  subject: string;
  notAfter: string;
  /** expired before the node arrives */
  expiredOnArrival: boolean;
  fate: Fate;
  /** what becomes of it once expired: who renews it, if anybody */
  whenExpired: Exclude<Fate, 'valid'>;
}

export interface CertificateScan {
  certificates: CertificateReport[];
  /** each source that could not be read, and why */
  unreadable: string[];
}

/** kubelet's current certificates: the agent approves the CSRs for their successors. */
export const KUBELET_FILES = [
  '/var/lib/kubelet/pki/kubelet-client-current.pem',
  '/var/lib/kubelet/pki/kubelet-server-current.pem',
] as const;

/** kubeconfigs whose embedded client certificates matter, and who renews them once expired */
export const KUBECONFIGS: readonly { file: string; whenExpired: Renewal }[] = [
  // kubelet's own, once bootstrapped: its client certificate (usually a file reference instead)
  { file: '/var/lib/kubelet/kubeconfig', whenExpired: 'agent approves renewal' },
  // the bootstrap credential kubelet re-bootstraps with: nothing renews it
  { file: '/etc/kubernetes/kubeconfig', whenExpired: 'needs a person' },
];

/** the static pods' copies of their secrets: <pod resources>/secrets/<secret>/<file>.crt */
export const STATIC_POD_RESOURCES = '/etc/kubernetes/static-pod-resources';

const KASO_NAMESPACE = 'openshift-kube-apiserver-operator';
const KAS_NAMESPACE = 'openshift-kube-apiserver';
/** the kube-apiserver's secrets its cert-regeneration controller regenerates once expired */
const KAS_REGENERATED = [
  'aggregator-client',
  'kubelet-client',
  'localhost-serving-cert-certkey',
  'service-network-serving-certkey',
  'external-loadbalancer-serving-certkey',
  'internal-loadbalancer-serving-certkey',
];
/** the same, as namespace/name */
export const REGENERATED_AT_START: readonly string[] = [
  ...['aggregator-client-signer', 'kube-apiserver-to-kubelet-signer', 'localhost-serving-signer'].map(
    (n) => `${KASO_NAMESPACE}/${n}`,
  ),
  ...['service-network-serving-signer', 'loadbalancer-serving-signer'].map((n) => `${KASO_NAMESPACE}/${n}`),
  ...KAS_REGENERATED.map((n) => `${KAS_NAMESPACE}/${n}`),
];

/** the kube-apiserver's certificates its cert syncer copies from the secrets (not a revision's) */
const KAS_CERTS = 'kube-apiserver-certs';

type Renewal = Exclude<Fate, 'valid'>;

function report(source: string, pem: string, arrival: Date, whenExpired: Renewal): CertificateReport | undefined {
  const [leaf] = certificatesIn(pem);
  if (!leaf) return undefined;
  const notAfter = new Date(leaf.validTo);
  const expiredOnArrival = notAfter.getTime() <= arrival.getTime();
  return {
    source,
    subject: leaf.subject.replace(/\n/g, ', '),
    notAfter: notAfter.toISOString(),
    expiredOnArrival,
    fate: expiredOnArrival ? whenExpired : 'valid',
    whenExpired,
  };
}

interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

interface Kubeconfig {
  users?: { name?: string; user?: { 'client-certificate-data'?: string } }[];
}

/** One node file's certificates as PEM texts, each with its source name; undefined when the file is not there. */
type NodeSource = { source: string; pem: string; whenExpired: Renewal }[];

async function kubeconfigCertificates(fs: RootFs, file: string, whenExpired: Renewal): Promise<NodeSource | undefined> {
  const bytes = await fs.read(file);
  if (bytes === undefined) return undefined;
  const config = parseYamlDocument(bytes, file) as Kubeconfig;
  return (config.users ?? []).flatMap(({ name, user }) => {
    const data = user?.['client-certificate-data'];
    return data
      ? [{ source: `${file} (user ${name ?? '?'})`, pem: Buffer.from(data, 'base64').toString(), whenExpired }]
      : [];
  });
}

/** A folder's entries, sorted; none for a file where the walk expects a folder. */
async function entries(fs: RootFs, dir: string): Promise<string[]> {
  try {
    return (await fs.list(dir)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw err;
  }
}

/** Every certificate file a static pod reads from its secrets, with who renews it. */
async function staticPodFiles(fs: RootFs): Promise<{ file: string; whenExpired: Renewal }[]> {
  const out: { file: string; whenExpired: Renewal }[] = [];
  for (const resources of await entries(fs, STATIC_POD_RESOURCES)) {
    const secrets = path.posix.join(STATIC_POD_RESOURCES, resources, 'secrets');
    for (const secret of await entries(fs, secrets)) {
      const regenerated = resources === KAS_CERTS && KAS_REGENERATED.includes(secret);
      for (const name of await entries(fs, path.posix.join(secrets, secret)))
        if (name.endsWith('.crt'))
          out.push({
            file: path.posix.join(secrets, secret, name),
            whenExpired: regenerated ? 'regenerated at start' : 'needs a person',
          });
    }
  }
  return out;
}

/** Each node source by its name, and how to read its certificates. */
async function nodeSources(fs: RootFs): Promise<{ name: string; read: () => Promise<NodeSource | undefined> }[]> {
  const file = (name: string, whenExpired: Renewal) => ({
    name,
    read: async (): Promise<NodeSource | undefined> => {
      const pem = await fs.readText(name);
      return pem === undefined ? undefined : [{ source: name, pem, whenExpired }];
    },
  });
  return [
    ...KUBELET_FILES.map((f) => file(f, 'agent approves renewal')),
    ...KUBECONFIGS.map((k) => ({ name: k.file, read: () => kubeconfigCertificates(fs, k.file, k.whenExpired) })),
    ...(await staticPodFiles(fs)).map((f) => file(f.file, f.whenExpired)),
  ];
}

export async function certificateReports(
  fs: RootFs,
  kube: Kube,
  now: Date,
  shelfDays: number,
): Promise<CertificateScan> {
  const arrival = new Date(now.getTime() + shelfDays * DAY_MS);
  const certificates: CertificateReport[] = [];
  const unreadable: string[] = [];
  const add = (source: string, pem: string, whenExpired: Renewal) => {
    try {
      const r = report(source, pem, arrival, whenExpired);
      if (r) certificates.push(r);
      else unreadable.push(`${source}: no certificate in it`);
    } catch (err) {
      unreadable.push(`${source}: not a readable certificate (${errorMessage(err)})`);
    }
  };
  let sources: Awaited<ReturnType<typeof nodeSources>> = [];
  try {
    sources = await nodeSources(fs);
  } catch (err) {
    unreadable.push(`${STATIC_POD_RESOURCES}: cannot be listed (${errorMessage(err)})`);
  }
  for (const { name, read } of sources) {
    try {
      for (const s of (await read()) ?? []) add(s.source, s.pem, s.whenExpired);
    } catch (err) {
      unreadable.push(`${name}: cannot be read (${errorMessage(err)})`);
    }
  }
  let secrets: Secret[] = [];
  try {
    secrets = await kube.list<Secret>('v1', 'Secret');
  } catch (err) {
    unreadable.push(`the cluster's TLS secrets: cannot be listed (${errorMessage(err)})`);
  }
  for (const s of secrets.filter((x) => x.type === 'kubernetes.io/tls' && x.data?.['tls.crt'])) {
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    const fate: Renewal = REGENERATED_AT_START.includes(key) ? 'regenerated at start' : 'needs a person';
    add(`Secret ${key}`, Buffer.from(s.data!['tls.crt']!, 'base64').toString('utf8'), fate);
  }
  return { certificates, unreadable };
}

/**
 * How long before the first expiry nobody renews the node should be powered on: a site without a
 * time server runs on a clock that is only known to be plausible, and the first boot at the site
 * may come days after the node was delivered.
 */
export const POWER_ON_MARGIN_DAYS = 7;

/**
 * The power-on-by date: the earliest expiry of a certificate nothing renews while the node is off
 * (kubelet's are renewed through CSR approval, the kube-apiserver's regenerated at start), less the
 * margin; undefined when none expires.
 */
export function powerOnByDate(
  certificates: readonly CertificateReport[],
): { date: string; expiry: string; certificate: string } | undefined {
  const first = certificates
    .filter((c) => c.whenExpired === 'needs a person')
    .sort((a, b) => Date.parse(a.notAfter) - Date.parse(b.notAfter))[0];
  if (!first) return undefined;
  return {
    date: new Date(Date.parse(first.notAfter) - POWER_ON_MARGIN_DAYS * DAY_MS).toISOString(),
    expiry: first.notAfter,
    certificate: `${first.source} (${first.subject})`,
  };
}
