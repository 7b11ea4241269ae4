/**
 * Where the checks' context comes from: the site-config (the run's health step has it; `watch PATH`
 * reads one), and `<state-dir>/watch-context.json`, which keeps what the site-config cannot say (the
 * factory's registries, known only before the mirrors were replaced) for the watcher that runs later.
 */
import path from 'node:path';
import * as z from 'zod';
import type { Site } from '../config/site.js';
import { readJsonFile } from '../ports/json-file.js';
import type { RootFs } from '../ports/fs.js';
import { parseImage } from './images.js';
import { EMPTY_CONTEXT, type WatchContext } from './model.js';

export const CONTEXT_FILE = 'watch-context.json';

const contextSchema = z.object({
  siteRegistries: z.array(z.string()),
  digestMirrorSources: z.array(z.string()),
  tagMirrorSources: z.array(z.string()),
  factoryRegistries: z.array(z.string()),
});

const unique = (values: readonly string[]): string[] => [...new Set(values)].sort();

/** The site's half of the context: its mirror targets and the sources they cover. */
export function contextFromSite(site: Site, factoryRegistries: readonly string[] = []): WatchContext {
  const mirrors = [...site.imageDigestMirrors, ...site.imageTagMirrors];
  return {
    siteRegistries: unique(mirrors.flatMap((m) => m.mirrors ?? []).map((m) => parseImage(`${m}:x`).host)),
    digestMirrorSources: unique(site.imageDigestMirrors.map((m) => m.source)),
    tagMirrorSources: unique(site.imageTagMirrors.map((m) => m.source)),
    factoryRegistries: unique(factoryRegistries),
  };
}

const contextPath = (stateDir: string) => path.posix.join(stateDir, CONTEXT_FILE);

export function readContextFile(fs: RootFs, stateDir: string): Promise<WatchContext | undefined> {
  return readJsonFile(fs, contextPath(stateDir), { what: 'watcher context', schema: contextSchema });
}

export async function writeContextFile(fs: RootFs, stateDir: string, ctx: WatchContext): Promise<void> {
  await fs.writeAtomic(contextPath(stateDir), `${JSON.stringify(ctx, null, 2)}\n`, { mode: 0o644 });
}

/**
 * Remembers registries the factory used (e.g. the mirrors a relocation replaces), so the watcher can
 * tell an image that still comes from there. Adds to what is kept.
 */
export async function recordFactoryRegistries(fs: RootFs, stateDir: string, hosts: readonly string[]): Promise<void> {
  const current = (await readContextFile(fs, stateDir)) ?? EMPTY_CONTEXT;
  await writeContextFile(fs, stateDir, {
    ...current,
    factoryRegistries: unique([...current.factoryRegistries, ...hosts]),
  });
}

/** The context for a site: its mirrors, plus the factory registries kept in the state folder. */
export async function siteContext(fs: RootFs, stateDir: string, site: Site): Promise<WatchContext> {
  const kept = await readContextFile(fs, stateDir);
  const ctx = contextFromSite(site, kept?.factoryRegistries ?? []);
  // a factory registry the site mirrors to again is not stale
  return { ...ctx, factoryRegistries: ctx.factoryRegistries.filter((r) => !ctx.siteRegistries.includes(r)) };
}
