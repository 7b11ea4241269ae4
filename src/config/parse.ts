/**
 * Parsing: the site-config file, read with bounds inside its folder, as a document (safe YAML,
 * or an image-based install's manifest.json translated), then that document against the schema.
 */
import path from 'node:path';
import type { Finding } from '../base/findings.js';
import { fail } from './fail.js';
import type { ImageBasedSite } from './ibi/image-based.js';
import { translateMedia } from './ibi/media.js';
import { sourceOf } from './ibi/to-native.js';
import type { Located } from './locate.js';
import type { FileReader } from './read.js';
import { readBounded } from './read-bounded.js';
import { openDocument } from './sealed.js';
import { parseSiteConfig } from './v1/parse.js';
import type { SiteConfigV1 } from './v1/schema.js';
import { DocumentError, parseYamlDocument } from './yaml.js';

export interface SiteDocument {
  /** the site-config file as read, and the name its findings and digest carry */
  bytes: Buffer;
  shown: string;
  document: unknown;
  imageBased?: ImageBasedSite;
}

/** Reads the site-config file and parses it; one that cannot be read or parsed is refused. */
export async function readDocument(
  now: Date,
  { file, dir, media }: Located,
  files: FileReader,
  findings: Finding[],
): Promise<SiteDocument> {
  const shown = path.relative(dir, file).split(path.sep).join('/');
  try {
    // the site-config itself is confined to its folder like every file it names
    const bytes = await readBounded(file, shown, { inside: files.realDir });
    if (media === 'ibi') return { bytes, shown, ...(await translateMedia(now, bytes, files, findings)) };
    return { bytes, shown, document: await openDocument(parseYamlDocument(bytes, shown), '$', files.seal, findings) };
  } catch (err) {
    if (err instanceof DocumentError)
      fail([{ severity: 'error', path: shown, message: err.message.replace(`${shown}: `, '') }], err.message);
    throw err;
  }
}

/** How a finding is named: a translated document's findings name the manifest.json field they came from. */
export function relabelFor(media: Located['media']): (f: Finding) => Finding {
  return media === 'ibi' ? (f) => ({ ...f, path: sourceOf(f.path) }) : (f) => f;
}

/** The document against the schema; one the schema cannot read is refused. */
export function parseConfig(document: unknown, relabel: (f: Finding) => Finding, findings: Finding[]): SiteConfigV1 {
  const parsed = parseSiteConfig(document);
  findings.push(...parsed.findings.map(relabel));
  if (!parsed.value) fail(findings);
  return parsed.value;
}
