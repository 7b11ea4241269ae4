/** An image-based install's config media read as the native site-config document it becomes. */
import path from 'node:path';
import { type Finding, hasErrors } from '../../base/findings.js';
import { caBundleProblem } from '../certificates.js';
import { fail } from '../fail.js';
import { isFile } from '../locate.js';
import type { FileReader } from '../read.js';
import { openDocument } from '../sealed.js';
import { DocumentError, decodeText } from '../yaml.js';
import type { ImageBasedSite } from './image-based.js';
import { ADMIN_CA_FIELD } from './field-table.js';
import { MANIFEST_FILE, MIRROR_FILES, mirrorsFromFile, seedReconfigurationSchema } from './seed-reconfiguration.js';
import { translateSeedReconfiguration } from './to-native.js';
import { parseLenient } from '../v1/parse.js';

/** manifest.json and the mirror sets beside it -> the native site-config document it becomes. */
export async function translateMedia(
  now: Date,
  bytes: Buffer,
  files: FileReader,
  findings: Finding[],
): Promise<{ document: unknown; imageBased: ImageBasedSite }> {
  let json: unknown;
  try {
    json = JSON.parse(decodeText(bytes, MANIFEST_FILE));
  } catch (err) {
    // never echo the parser's message: it quotes the text, pull secret included
    const message = err instanceof DocumentError ? err.message.replace(`${MANIFEST_FILE} `, '') : 'not valid JSON';
    fail([{ severity: 'error', path: MANIFEST_FILE, message }]);
  }
  json = await openDocument(json, `${MANIFEST_FILE}: $`, files.seal, findings);
  const parsed = parseLenient(seedReconfigurationSchema, json);
  findings.push(...parsed.findings.map((f) => ({ ...f, path: `${MANIFEST_FILE}: ${f.path}` })));
  if (!parsed.value) fail(findings);
  const translated = translateSeedReconfiguration(parsed.value);
  // a field left sealed (no node key here) is listed as such, not as missing
  findings.push(...translated.findings.filter((f) => !files.seal.left.includes(f.path)));
  const { adminClientCaPem } = translated.imageBased;
  const caProblem = adminClientCaPem !== undefined ? caBundleProblem(now, adminClientCaPem) : undefined;
  if (caProblem) findings.push({ severity: 'error', path: `${MANIFEST_FILE}: $.${ADMIN_CA_FIELD}`, ...caProblem });
  const spec = (translated.document as { spec: Record<string, unknown> }).spec;
  for (const name of MIRROR_FILES) {
    if (!(await isFile(path.join(files.dir, name)))) continue;
    const data = await files.read(name, name);
    let doc: unknown;
    try {
      doc = JSON.parse(decodeText(data, name));
    } catch {
      findings.push({ severity: 'error', path: name, message: 'not valid JSON' });
      continue;
    }
    const { mirrors, finding } = mirrorsFromFile(name, doc);
    if (finding) findings.push(finding);
    if (mirrors) spec.imageDigestMirrors = [...((spec.imageDigestMirrors as unknown[] | undefined) ?? []), ...mirrors];
  }
  if (hasErrors(findings)) fail(findings);
  return translated;
}
