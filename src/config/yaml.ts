/**
 * Safe YAML for files that come off a USB stick: core schema only (no custom
 * or binary tags), no collection aliases (alias bombs), bounded depth and size,
 * and a parsed value no bigger than a small multiple of the file that held it
 * (aliases of one long string would otherwise grow the first copy of it by
 * orders of magnitude).
 */
import yaml from 'js-yaml';
import { safeLine } from '../log/safe-text.js';

export const MAX_DOCUMENT_BYTES = 1024 * 1024;
const MAX_DEPTH = 64;
const MAX_NODES = 100_000;
/**
 * How much bigger the expanded value may be than its file: each value counts one, each string
 * (keys included) its length. Without aliases a document expands to at most about twice its bytes.
 */
export const EXPANSION_FACTOR = 4;
const EXPANSION_ALLOWANCE = 4096;

/** A file that cannot be read as a document; the message quotes the file, so it is made one inert line. */
export class DocumentError extends Error {
  constructor(
    message: string,
    /** the line (from 1) a YAML syntax error was found on */
    readonly line?: number,
  ) {
    super(safeLine(message));
  }
}

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

/**
 * Walks the loaded value once, before anything copies or validates it: a collection reached twice can
 * only come from a YAML alias, and the size it would take written out (strings included, as an alias
 * of a scalar repeats it) is bounded by the file's own size.
 */
function checkShape(value: unknown, what: string, fileBytes: number): void {
  const seen = new Set<object>();
  const budget = EXPANSION_FACTOR * fileBytes + EXPANSION_ALLOWANCE;
  let nodes = 0;
  let expanded = 0;
  const count = (size: number): void => {
    expanded += size;
    if (expanded > budget)
      throw new DocumentError(
        `${what}: expands to more than ${EXPANSION_FACTOR} times its ${fileBytes} bytes (aliases of long values)`,
      );
  };
  const visit = (v: unknown, depth: number): void => {
    count(typeof v === 'string' ? v.length + 1 : 1);
    if (v === null || typeof v !== 'object') return;
    if (seen.has(v)) throw new DocumentError(`${what}: YAML aliases of maps or lists are not allowed`);
    seen.add(v);
    if (depth > MAX_DEPTH) throw new DocumentError(`${what}: nested deeper than ${MAX_DEPTH} levels`);
    for (const [key, child] of Object.entries(v)) {
      if (++nodes > MAX_NODES) throw new DocumentError(`${what}: more than ${MAX_NODES} values`);
      count(key.length);
      visit(child, depth + 1);
    }
  };
  visit(value, 0);
}

function loadYaml(bytes: Buffer, what: string, load: (text: string) => unknown): unknown {
  const text = decodeText(bytes, what);
  let value: unknown;
  try {
    value = load(text);
  } catch (err) {
    const reason = err instanceof yaml.YAMLException ? err.reason : String(err);
    const mark =
      err instanceof yaml.YAMLException && err.mark
        ? ` (line ${err.mark.line + 1}, column ${err.mark.column + 1})`
        : '';
    const line = err instanceof yaml.YAMLException && err.mark ? err.mark.line + 1 : undefined;
    throw new DocumentError(`${what}: not valid YAML: ${reason}${mark}`, line);
  }
  checkShape(value, what, bytes.length);
  return value;
}

export function parseYamlDocument(bytes: Buffer, what: string): unknown {
  const value = loadYaml(bytes, what, (text) => yaml.load(text, { schema: yaml.CORE_SCHEMA, filename: what }));
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new DocumentError(`${what}: expected a mapping at the top level`);
  return value;
}

/**
 * Every document of a multi-document YAML file (JSON is one), in order, under the same limits as
 * one document: the file's size bounds all of them together. Empty documents are kept (as null),
 * so a document's index is its position in the file.
 */
export function parseYamlDocuments(bytes: Buffer, what: string): unknown[] {
  return loadYaml(bytes, what, (text) =>
    yaml.loadAll(text, undefined, { schema: yaml.CORE_SCHEMA, filename: what }),
  ) as unknown[];
}
