/**
 * Versions that only go forward. A signature may carry a generation number for the node it is
 * made for; the node keeps the last generation it started applying, with the digest of what that
 * signature covered and the day, in <state folder>/generation.json. A signed folder of an older
 * generation, or of the same generation with other contents, is refused (exit 3); the same stick
 * plugged in again is a rerun. Once a node has applied a generation, a signature without one is
 * refused too: it could be any older stick.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import * as z from 'zod';
import type { RootFs } from '../ports/fs.js';
import { readJsonFile } from '../ports/json-file.js';
import { canonicalJson, type Signed } from './signature.js';

export const GENERATION_FILE = 'generation.json';
/** a generation as an inventory cell gives it: a whole number from 1 */
export const GENERATION_TEXT = /^[1-9][0-9]{0,14}$/;

const appliedSchema = z.strictObject({
  version: z.literal(1),
  site: z.string(),
  generation: z.number().int().positive(),
  /** sha256 of the canonical list of files the signature covered */
  contents: z.string().regex(/^[0-9a-f]{64}$/),
  appliedAt: z.iso.datetime(),
});
export type AppliedGeneration = z.infer<typeof appliedSchema>;

/** What a signature covered, as one digest: the same stick gives the same digest. */
export const contentsDigest = (signed: Signed): string =>
  createHash('sha256')
    .update(canonicalJson({ site: signed.site, files: signed.files }))
    .digest('hex');

const where = (stateDir: string) => path.posix.join(stateDir, GENERATION_FILE);

export async function readAppliedGeneration(fs: RootFs, stateDir: string): Promise<AppliedGeneration | undefined> {
  return readJsonFile(fs, where(stateDir), {
    what: 'applied generation record',
    schema: appliedSchema,
    advice: 'restore it from a backup; removing it lets any older stick be applied again',
  });
}

const day = (iso: string) => iso.slice(0, 10);

/** Why this verified signature may not be applied after what the node applied, or undefined. */
export function generationProblem(signed: Signed, applied: AppliedGeneration | undefined): string | undefined {
  if (applied === undefined) return undefined;
  const { generation } = signed;
  const on = day(applied.appliedAt);
  if (generation === undefined)
    return `the signature carries no generation, and this node applied generation ${applied.generation} on ${on}: sign the folder with --generation above ${applied.generation}`;
  if (generation < applied.generation)
    return `generation ${generation} is older than the ${applied.generation} applied on ${on}`;
  if (generation === applied.generation && contentsDigest(signed) !== applied.contents)
    return `generation ${generation} was applied on ${on} with other contents: a changed folder needs a newer generation`;
  return undefined;
}

/**
 * Records the generation a run starts applying, before its first change: from then on an older
 * stick is refused even if this run stops half way. A rerun of the same generation keeps the day
 * it was first applied.
 */
export async function recordGeneration(fs: RootFs, stateDir: string, signed: Signed | undefined, now: Date) {
  if (signed?.generation === undefined) return;
  const applied = await readAppliedGeneration(fs, stateDir);
  if (applied?.generation === signed.generation) return;
  const record: AppliedGeneration = {
    version: 1,
    site: signed.site,
    generation: signed.generation,
    contents: contentsDigest(signed),
    appliedAt: now.toISOString(),
  };
  await fs.mkdirp(stateDir, 0o700);
  await fs.writeAtomic(where(stateDir), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o644 });
}
