/**
 * The images this node needs from a registry once it pulls through the site's: the release image
 * ClusterVersion wants, the release payload's component images in the node's image store (CRI-O's
 * containers/storage, overlay-images/images.json), the images of every pod not finished, and the
 * index images of the CatalogSources. Each keeps who needs it, and whether the control plane or
 * the platform does (a missing one breaks the cluster) or only a workload. Images of a registry
 * inside the cluster (`*.svc`) are not the site's business and are left out.
 */
import type { RootFs } from '../ports/fs.js';
import type { Kube, KubeObject } from '../ports/kube.js';
import { parseImage } from './resolve.js';

/** payload: the release and its components; platform: a pod of openshift-* / kube-*; catalog: an OLM index */
export type ImageRole = 'payload' | 'platform' | 'catalog' | 'workload';

export interface NeededImage {
  image: string;
  role: ImageRole;
  /** who needs it: `pod ns/name`, `ClusterVersion version (desired release)`, ... (the first few) */
  users: string[];
}

/** the node's image store, as CRI-O's containers/storage keeps it */
export const IMAGE_STORE = '/var/lib/containers/storage/overlay-images/images.json';

/** the roles, most critical first: an image needed by several takes the first of theirs */
/** a registry inside the cluster (the integrated one, or another service) */
const CLUSTER_LOCAL = /\.svc(\.cluster\.local)?(:\d+)?$/;
const ROLES: readonly ImageRole[] = ['payload', 'platform', 'catalog', 'workload'];
const MAX_USERS = 3;

export const isCritical = (role: ImageRole): boolean => role !== 'workload';

/** Namespaces of the control plane and the platform's operators. */
const platformNamespace = (ns: string | undefined): boolean =>
  ns !== undefined && (ns.startsWith('openshift') || ns.startsWith('kube-') || ns === 'default');

type PodObject = KubeObject & {
  spec?: { containers?: { image?: string }[]; initContainers?: { image?: string }[] };
  status?: { phase?: string };
};
type ClusterVersionObject = KubeObject & { status?: { desired?: { image?: string; version?: string } } };
type CatalogObject = KubeObject & { spec?: { image?: string } };

/** The registry organisation of a release image (`quay.io/openshift-release-dev`): its components live under it. */
function releaseOrganisation(release: string | undefined): string | undefined {
  const ref = release ? parseImage(release) : undefined;
  if (!ref) return undefined;
  const slash = ref.repository.lastIndexOf('/');
  return slash > 0 ? `${ref.registry}/${ref.repository.slice(0, slash)}` : ref.registry;
}

/** Image names in the node's store (names only: `repo@sha256:...`, `repo:tag`); none when the store is absent. */
export async function storedImages(fs: RootFs): Promise<string[]> {
  const text = await fs.readText(IMAGE_STORE);
  if (text === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${IMAGE_STORE} is not valid JSON`);
  }
  if (!Array.isArray(parsed)) throw new Error(`${IMAGE_STORE} does not hold a list of images`);
  return parsed.flatMap((i: { names?: unknown }) =>
    Array.isArray(i.names) ? i.names.filter((n): n is string => typeof n === 'string') : [],
  );
}

/** Every image the node needs, each once, with its most critical role. */
export async function neededImages(kube: Kube, fs: RootFs): Promise<NeededImage[]> {
  const [cv, pods, catalogs, stored] = await Promise.all([
    kube.get<ClusterVersionObject>({ apiVersion: 'config.openshift.io/v1', kind: 'ClusterVersion', name: 'version' }),
    kube.list<PodObject>('v1', 'Pod'),
    kube.list<CatalogObject>('operators.coreos.com/v1alpha1', 'CatalogSource'),
    storedImages(fs),
  ]);
  const found = new Map<string, NeededImage>();
  const need = (image: string | undefined, role: ImageRole, user: string) => {
    const ref = image ? parseImage(image) : undefined;
    // the cluster's own registry moves with the cluster: no site registry serves it
    if (!image || !ref || CLUSTER_LOCAL.test(ref.registry)) return;
    const have = found.get(image);
    if (!have) return void found.set(image, { image, role, users: [user] });
    if (ROLES.indexOf(role) < ROLES.indexOf(have.role)) have.role = role;
    if (have.users.length < MAX_USERS && !have.users.includes(user)) have.users.push(user);
  };
  const release = cv?.status?.desired?.image;
  const version = cv?.status?.desired?.version;
  need(release, 'payload', `ClusterVersion version (desired release${version ? ` ${version}` : ''})`);
  const organisation = releaseOrganisation(release);
  for (const name of stored) {
    const ref = parseImage(name);
    const underRelease =
      organisation !== undefined &&
      ref !== undefined &&
      `${ref.registry}/${ref.repository}`.startsWith(`${organisation}/`);
    // the payload's components are pulled by digest; a tag in the store is a name the node gave a pull
    if (underRelease && ref.digest) need(name, 'payload', 'the node image store (release payload)');
  }
  for (const pod of pods) {
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') continue;
    const role = platformNamespace(pod.metadata.namespace) ? 'platform' : 'workload';
    const user = `pod ${pod.metadata.namespace}/${pod.metadata.name}`;
    for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) need(c.image, role, user);
  }
  for (const c of catalogs) need(c.spec?.image, 'catalog', `CatalogSource ${c.metadata.namespace}/${c.metadata.name}`);
  return [...found.values()];
}
