/**
 * Where the node pulls an image from once the site's mirrors are live, as CRI-O decides it from
 * /etc/containers/registries.conf (containers-registries.conf(5), version 2), which the
 * machine-config operator renders from ImageDigestMirrorSet and ImageTagMirrorSet: one [[registry]]
 * per source (prefix = location = source), its digest mirrors with pull-from-mirror = "digest-only",
 * its tag mirrors with "tag-only", and `blocked = true` for mirrorSourcePolicy NeverContactSource.
 *
 * For a reference CRI-O takes the entry with the longest matching prefix (a prefix matches at a
 * path or host boundary, `*.example.com` any host under that domain), tries its mirrors in order
 * (those a digest or a tag may be pulled from), the rest of the repository path appended to each,
 * then the source itself unless it is blocked; the first that serves the manifest wins.
 */
import type { Mirror } from '../config/v1/schema.js';

/** An image reference split as the distribution reference grammar does; docker.io made explicit. */
export interface ImageRef {
  /** host[:port] */
  registry: string;
  /** path inside the registry */
  repository: string;
  tag?: string;
  digest?: string;
}

const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;

/** `quay.io/a/b@sha256:...`, `host:5000/a:tag`, `busybox` (docker.io/library/busybox:latest); or undefined */
export function parseImage(image: string): ImageRef | undefined {
  const at = image.indexOf('@');
  const digest = at >= 0 ? image.slice(at + 1) : undefined;
  if (digest !== undefined && !DIGEST.test(digest)) return undefined;
  let name = at >= 0 ? image.slice(0, at) : image;
  let tag: string | undefined;
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) {
    tag = name.slice(colon + 1);
    name = name.slice(0, colon);
  }
  if (name === '' || /\s/.test(image)) return undefined;
  const slash = name.indexOf('/');
  const first = slash >= 0 ? name.slice(0, slash) : '';
  const hasHost = first.includes('.') || first.includes(':') || first === 'localhost';
  const registry = hasHost ? first : 'docker.io';
  let repository = hasHost ? name.slice(slash + 1) : name;
  if (registry === 'docker.io' && !repository.includes('/')) repository = `library/${repository}`;
  if (repository === '') return undefined;
  return { registry, repository, ...(tag !== undefined && { tag }), ...(digest !== undefined && { digest }) };
}

/** The reference the registry answers for: the digest when there is one, else the tag (latest by default). */
export const referenceOf = (ref: ImageRef): string => ref.digest ?? ref.tag ?? 'latest';

export const formatImage = (location: string, ref: ImageRef): string =>
  ref.digest ? `${location}@${ref.digest}` : `${location}:${ref.tag ?? 'latest'}`;

/** One place CRI-O would ask: `location` is host[:port]/repository. */
export interface PullSource {
  location: string;
  mirror: boolean;
}

/** One [[registry]] entry of the registries.conf the site's mirror sets render to. */
interface RegistryEntry {
  prefix: string;
  mirrors: { location: string; pullFrom: 'digest-only' | 'tag-only' }[];
  blocked: boolean;
}

/** The registries.conf entries for the site's digest and tag mirrors, as the machine-config operator merges them. */
export function registryEntries(digest: readonly Mirror[], tag: readonly Mirror[]): RegistryEntry[] {
  const entries = new Map<string, RegistryEntry>();
  const add = (list: readonly Mirror[], pullFrom: 'digest-only' | 'tag-only') => {
    for (const m of list) {
      const entry = entries.get(m.source) ?? { prefix: m.source, mirrors: [], blocked: false };
      for (const location of m.mirrors)
        if (!entry.mirrors.some((x) => x.location === location && x.pullFrom === pullFrom))
          entry.mirrors.push({ location, pullFrom });
      entry.blocked ||= m.mirrorSourcePolicy === 'NeverContactSource';
      entries.set(m.source, entry);
    }
  };
  add(digest, 'digest-only');
  add(tag, 'tag-only');
  return [...entries.values()];
}

/** How long a match of `prefix` on `host/repository` is, or -1 when it does not match. */
function matchLength(prefix: string, name: string): number {
  if (prefix.startsWith('*.')) {
    const host = name.split('/')[0]!;
    return host.endsWith(prefix.slice(1)) ? prefix.length : -1;
  }
  if (name === prefix || name.startsWith(`${prefix}/`)) return prefix.length;
  return -1;
}

/** The places CRI-O would try for `ref`, in order; empty when its source is blocked and no mirror serves it. */
export function pullSources(ref: ImageRef, entries: readonly RegistryEntry[]): PullSource[] {
  const name = `${ref.registry}/${ref.repository}`;
  let best: RegistryEntry | undefined;
  let bestLength = -1;
  for (const e of entries) {
    const length = matchLength(e.prefix, name);
    if (length > bestLength) [best, bestLength] = [e, length];
  }
  if (!best) return [{ location: name, mirror: false }];
  const rest = best.prefix.startsWith('*.') ? name.slice(name.indexOf('/')) : name.slice(best.prefix.length);
  const usable = best.mirrors.filter((m) => (ref.digest ? m.pullFrom === 'digest-only' : m.pullFrom === 'tag-only'));
  return [
    ...usable.map((m) => ({ location: `${m.location}${rest}`, mirror: true })),
    ...(best.blocked ? [] : [{ location: name, mirror: false }]),
  ];
}
