/**
 * Which certificates will have expired when the node arrives, `shelfDays` from now, and what
 * happens to each then (openshift-behaviours.md §8, "Kubelet certificates after long power-off"):
 *
 *   - a secret or CA bundle the cluster marks with
 *     `certificates.openshift.io/auto-regenerate-after-offline-expiry` is regenerated at start:
 *     upstream sets that annotation (library-go pkg/operator/certrotation,
 *     AutoRegenerateAfterOfflineExpiryAnnotation, set through AdditionalAnnotations) only on what
 *     its controllers regenerate once expired, with a link to the change that proved it, and
 *     openshift/origin keeps the registry of every TLS artifact of a cluster and of which carry it
 *     (tls/autoregenerate-after-expiry/). The node's copies of such a secret (the static pods'
 *     <component>-certs/secrets/<name>/*.crt, which each component's cert syncer keeps in step with
 *     its namespace's secret: origin's "Other locations") are regenerated with it;
 *   - kubelet's client and serving certificates (/var/lib/kubelet/pki, 720 h), and a client
 *     certificate embedded in kubelet's kubeconfig: kubelet re-bootstraps or asks for a renewal at
 *     start, the machine approver approves neither on a single node, and the agent's csr-approval
 *     step does (upstream does not annotate files: origin lists them under Node / Kubelet as not
 *     meeting the requirement);
 *   - the few secrets upstream regenerates without marking them (UNMARKED_REGENERATED, each with why);
 *   - anything else that expires before arrival needs a person, and the node is not fit to ship:
 *     kubelet's bootstrap credential in /etc/kubernetes/kubeconfig (10 years, signed by the
 *     installer's kubelet-bootstrap-kubeconfig-signer, which nothing on the cluster renews: without
 *     it kubelet cannot re-bootstrap), etcd's and the other static pods' certificates, and every
 *     other TLS secret, an application's 30-day certificate among them.
 *
 * Read from the node's files (under --root), from every TLS secret of the cluster and from the CA
 * bundles that carry the annotation. A source that cannot be read (a file that is not a
 * certificate, secrets the API will not list) is named in `unreadable`: a check that could not look
 * does not pass.
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

/** what upstream puts on a secret or CA bundle its controllers regenerate after an offline expiry */
export const AUTO_REGENERATE_ANNOTATION = 'certificates.openshift.io/auto-regenerate-after-offline-expiry';

const KASO_NAMESPACE = 'openshift-kube-apiserver-operator';
const KAS_NAMESPACE = 'openshift-kube-apiserver';
/**
 * Why an unmarked kube-apiserver secret is regenerated at start all the same: the static pod's
 * kube-apiserver-cert-regeneration-controller (cluster-kube-apiserver-operator
 * bindata/assets/kube-apiserver/pod.yaml, NewCertRotationControllerOnlyWhenExpired in
 * pkg/operator/certrotationcontroller/certrotationcontroller.go) regenerates each once expired, and
 * the annotation came to these secrets only with cluster-kube-apiserver-operator PR 1631: a release
 * before it regenerates them unmarked.
 */
const BEFORE_THE_MARK =
  "regenerated by the kube-apiserver's cert-regeneration controller; marked only from cluster-kube-apiserver-operator PR 1631 on";

/** Secrets regenerated at start that a cluster may not mark, as namespace/name, each with why. */
export const UNMARKED_REGENERATED: ReadonlyMap<string, string> = new Map(
  [
    ...[
      'aggregator-client-signer',
      'kube-apiserver-to-kubelet-signer',
      'localhost-serving-signer',
      'service-network-serving-signer',
      'loadbalancer-serving-signer',
    ].map((n) => `${KASO_NAMESPACE}/${n}`),
    ...[
      'aggregator-client',
      'kubelet-client',
      'localhost-serving-cert-certkey',
      'service-network-serving-certkey',
      'external-loadbalancer-serving-certkey',
      'internal-loadbalancer-serving-certkey',
    ].map((n) => `${KAS_NAMESPACE}/${n}`),
  ].map((key) => [key, BEFORE_THE_MARK]),
);

/** The namespace whose secrets a static pod's <component>-certs/secrets/ copies hold (origin's "Other locations"). */
const CERT_SYNCER_NAMESPACES: Readonly<Record<string, string>> = {
  'kube-apiserver-certs': KAS_NAMESPACE,
  'kube-controller-manager-certs': 'openshift-kube-controller-manager',
  'kube-scheduler-certs': 'openshift-kube-scheduler',
};

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

/** a Secret or a ConfigMap: its data as the API returns it */
interface DataObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** Whether the cluster marks an object as regenerated after an offline expiry. */
const marked = (o: KubeObject): boolean => o.metadata.annotations?.[AUTO_REGENERATE_ANNOTATION] !== undefined;

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

/** Every certificate file a static pod reads from its secrets, with who renews it (`regenerated`: namespace/name). */
async function staticPodFiles(
  fs: RootFs,
  regenerated: ReadonlySet<string>,
): Promise<{ file: string; whenExpired: Renewal }[]> {
  const out: { file: string; whenExpired: Renewal }[] = [];
  for (const resources of await entries(fs, STATIC_POD_RESOURCES)) {
    const secrets = path.posix.join(STATIC_POD_RESOURCES, resources, 'secrets');
    const namespace = CERT_SYNCER_NAMESPACES[resources];
    for (const secret of await entries(fs, secrets)) {
      const synced = namespace !== undefined && regenerated.has(`${namespace}/${secret}`);
      for (const name of await entries(fs, path.posix.join(secrets, secret)))
        if (name.endsWith('.crt'))
          out.push({
            file: path.posix.join(secrets, secret, name),
            whenExpired: synced ? 'regenerated at start' : 'needs a person',
          });
    }
  }
  return out;
}

/** Each node source by its name, and how to read its certificates. */
async function nodeSources(
  fs: RootFs,
  regenerated: ReadonlySet<string>,
): Promise<{ name: string; read: () => Promise<NodeSource | undefined> }[]> {
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
    ...(await staticPodFiles(fs, regenerated)).map((f) => file(f.file, f.whenExpired)),
  ];
}

/** A list from the API, or none with why in `unreadable`. */
async function listed<T extends KubeObject>(
  what: string,
  list: () => Promise<T[]>,
  unreadable: string[],
): Promise<T[]> {
  try {
    return await list();
  } catch (err) {
    unreadable.push(`${what}: cannot be listed (${errorMessage(err)})`);
    return [];
  }
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
  // the cluster first: whether a node file is regenerated follows from its secret's mark
  const secrets = await listed("the cluster's TLS secrets", () => kube.list<DataObject>('v1', 'Secret'), unreadable);
  const bundles = await listed("the cluster's CA bundles", () => kube.list<DataObject>('v1', 'ConfigMap'), unreadable);
  const keyOf = (o: KubeObject) => `${o.metadata.namespace}/${o.metadata.name}`;
  const tls = secrets.filter((x) => x.type === 'kubernetes.io/tls' && x.data?.['tls.crt']);
  const regenerated = new Set([...tls.filter(marked).map(keyOf), ...UNMARKED_REGENERATED.keys()]);

  let sources: Awaited<ReturnType<typeof nodeSources>> = [];
  try {
    sources = await nodeSources(fs, regenerated);
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
  for (const s of tls) {
    const fate: Renewal = regenerated.has(keyOf(s)) ? 'regenerated at start' : 'needs a person';
    add(`Secret ${keyOf(s)}`, Buffer.from(s.data!['tls.crt']!, 'base64').toString('utf8'), fate);
  }
  // a CA bundle is read only when marked: an unmarked one holds whatever trust its owner put there
  for (const b of bundles.filter((x) => marked(x) && x.data?.['ca-bundle.crt']))
    add(`ConfigMap ${keyOf(b)}`, b.data!['ca-bundle.crt']!, 'regenerated at start');
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
 * (kubelet's are renewed through CSR approval, what the cluster marks regenerated at start), less the
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
