/**
 * Image references as registries.conf reads them: `host[:port]/path[:tag][@sha256:...]`, where a
 * first component without a dot, a colon or `localhost` is a Docker Hub path.
 */
import type { WatchContext } from './model.js';

export interface ImageRef {
  host: string;
  /** host/path, without tag or digest */
  repository: string;
  byDigest: boolean;
}

export function parseImage(image: string): ImageRef {
  const [name = '', digest] = image.split('@');
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const explicitHost = first.includes('.') || first.includes(':') || first === 'localhost';
  const host = explicitHost ? first : 'docker.io';
  const path = explicitHost ? name.slice(slash + 1) : name;
  // a colon after the last slash is a tag; one before it is a port
  const lastSlash = path.lastIndexOf('/');
  const colon = path.indexOf(':', lastSlash + 1);
  return { host, repository: `${host}/${colon < 0 ? path : path.slice(0, colon)}`, byDigest: digest !== undefined };
}

/** Whether a mirror source (`host`, `host/path` or `*.domain`) covers the repository. */
export function sourceCovers(source: string, ref: ImageRef): boolean {
  if (source.startsWith('*.')) return ref.host.endsWith(source.slice(1));
  return ref.repository === source || ref.repository.startsWith(`${source}/`) || ref.host === source;
}

/** Served inside the cluster: the integrated registry or another service. */
const clusterLocal = (host: string): boolean => /\.svc(\.cluster\.local)?(:\d+)?$/.test(host);

export type RegistryKind = 'factory' | 'site' | 'mirrored' | 'cluster' | 'unknown';

/**
 * Where an image comes from at this site: the factory (not reachable any more), a site registry, a
 * source the site mirrors for this kind of pull, the cluster itself, or somewhere else.
 */
export function registryKind(ctx: WatchContext, image: string): RegistryKind {
  const ref = parseImage(image);
  if (ctx.factoryRegistries.includes(ref.host)) return 'factory';
  if (clusterLocal(ref.host)) return 'cluster';
  if (ctx.siteRegistries.includes(ref.host)) return 'site';
  const sources = ref.byDigest ? ctx.digestMirrorSources : ctx.tagMirrorSources;
  if (sources.some((s) => sourceCovers(s, ref))) return 'mirrored';
  return 'unknown';
}

/** Pulled by tag from a repository that only digest mirrors cover: the mirrors do not apply to it. */
export function onlyDigestMirrored(ctx: WatchContext, image: string): boolean {
  const ref = parseImage(image);
  return (
    !ref.byDigest &&
    ctx.digestMirrorSources.some((s) => sourceCovers(s, ref)) &&
    !ctx.tagMirrorSources.some((s) => sourceCovers(s, ref))
  );
}

/** Whether the site mirrors anything: without mirrors it pulls from the sources, and any registry may be right. */
export const siteHasMirrors = (ctx: WatchContext): boolean => ctx.siteRegistries.length > 0;
