/**
 * A site template: a folder of text files (site-config.yaml, network.yaml, ...) holding
 * `{{ column }}` placeholders that each inventory row fills in. A probe render, with a marker in
 * place of each value, tells which column a site-config field came from, so a validation error is
 * reported on the inventory cell that caused it.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { formatPath } from '../base/findings.js';
import { SITE_CONFIG_NAMES } from '../config/locate.js';
import { UsageError } from '../base/errors.js';

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;
// letters first and no YAML indicator characters, so a marker is a plain scalar wherever a value can stand
const MARKER = (column: string) => `SNOCOLUMN_${column}_SNOCOLUMN`;
const MARKED = /SNOCOLUMN_(.+?)_SNOCOLUMN/g;

/** a template file split at its placeholders: even entries are text, odd entries column names */
interface TemplateFile {
  name: string;
  parts: string[];
}

export interface Template {
  files: TemplateFile[];
  /** every column a placeholder names */
  columns: Set<string>;
  /** a finding's path (as the loader names it) -> the columns whose values it holds */
  sources: Map<string, string[]>;
}

async function listFiles(dir: string, under = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(dir, under), { withFileTypes: true })) {
    const name = under ? `${under}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...(await listFiles(dir, name)));
    else if (entry.isFile()) out.push(name);
    else throw new UsageError(`--template: ${name} is neither a file nor a folder`);
  }
  return out.sort();
}

export function fill(file: TemplateFile, value: (column: string) => string): string {
  let out = '';
  for (let i = 0; i < file.parts.length; i++) out += i % 2 === 0 ? file.parts[i] : value(file.parts[i]!);
  return out;
}

/** Records, for every leaf of a probe document holding markers, its path and the columns it came from. */
function collectSources(doc: unknown, prefix: string, segments: PropertyKey[], into: Map<string, string[]>): void {
  if (typeof doc === 'string') {
    const columns = [...doc.matchAll(MARKED)].map((m) => m[1]!);
    if (columns.length > 0) into.set(`${prefix}${formatPath(segments)}`, columns);
  } else if (Array.isArray(doc)) doc.forEach((v, i) => collectSources(v, prefix, [...segments, i], into));
  else if (doc && typeof doc === 'object')
    for (const [k, v] of Object.entries(doc)) collectSources(v, prefix, [...segments, k], into);
}

export async function readTemplate(dir: string): Promise<Template> {
  let names: string[];
  try {
    names = await listFiles(dir);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`--template: cannot read ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (!names.some((n) => SITE_CONFIG_NAMES.includes(n)))
    throw new UsageError(`--template: ${dir} holds no ${SITE_CONFIG_NAMES[0]}`);
  const files: TemplateFile[] = [];
  const columns = new Set<string>();
  const sources = new Map<string, string[]>();
  for (const name of names) {
    const text = await readFile(path.join(dir, name), 'utf8');
    const parts = text.split(PLACEHOLDER);
    for (let i = 1; i < parts.length; i += 2) columns.add(parts[i]!);
    const file = { name, parts };
    files.push(file);
    if (!/\.(ya?ml|json)$/.test(name)) continue;
    try {
      const probe = yaml.load(fill(file, MARKER), { schema: yaml.CORE_SCHEMA });
      collectSources(probe, SITE_CONFIG_NAMES.includes(name) ? '' : `${name}: `, [], sources);
    } catch {
      // a template that only parses once filled in (a number column, say) has no probe: its
      // errors are then reported on the file and path, without the column
    }
  }
  return { files, columns, sources };
}

/** The columns whose values the field a finding names was filled from. */
export function columnsOf(template: Template, findingPath: string): string[] {
  return template.sources.get(findingPath) ?? [];
}
