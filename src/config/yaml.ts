/**
 * Safe YAML for files that come off a USB stick: core schema only (no custom
 * or binary tags), no collection aliases (alias bombs), bounded depth and size.
 */
import yaml from 'js-yaml';

export const MAX_DOCUMENT_BYTES = 1024 * 1024;
const MAX_DEPTH = 64;
const MAX_NODES = 100_000;

export class DocumentError extends Error {}

export function decodeText(bytes: Buffer, what: string): string {
  if (bytes.length > MAX_DOCUMENT_BYTES)
    throw new DocumentError(`${what} is ${bytes.length} bytes; the limit is ${MAX_DOCUMENT_BYTES}`);
  if (bytes.includes(0)) throw new DocumentError(`${what} is not a text file (NUL byte)`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new DocumentError(`${what} is not valid UTF-8 text`);
  }
}

/** Walks the loaded value once; a collection reached twice can only come from a YAML alias. */
function checkShape(value: unknown, what: string): void {
  const seen = new Set<object>();
  let nodes = 0;
  const visit = (v: unknown, depth: number): void => {
    if (v === null || typeof v !== 'object') return;
    if (seen.has(v)) throw new DocumentError(`${what}: YAML aliases of maps or lists are not allowed`);
    seen.add(v);
    if (depth > MAX_DEPTH) throw new DocumentError(`${what}: nested deeper than ${MAX_DEPTH} levels`);
    for (const child of Object.values(v)) {
      if (++nodes > MAX_NODES) throw new DocumentError(`${what}: more than ${MAX_NODES} values`);
      visit(child, depth + 1);
    }
  };
  visit(value, 0);
}

export function parseYamlDocument(bytes: Buffer, what: string): unknown {
  const text = decodeText(bytes, what);
  let value: unknown;
  try {
    value = yaml.load(text, { schema: yaml.CORE_SCHEMA, filename: what });
  } catch (err) {
    const reason = err instanceof yaml.YAMLException ? err.reason : String(err);
    const mark =
      err instanceof yaml.YAMLException && err.mark
        ? ` (line ${err.mark.line + 1}, column ${err.mark.column + 1})`
        : '';
    throw new DocumentError(`${what}: not valid YAML: ${reason}${mark}`);
  }
  checkShape(value, what);
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new DocumentError(`${what}: expected a mapping at the top level`);
  return value;
}
