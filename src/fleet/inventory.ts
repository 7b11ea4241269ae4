/**
 * A fleet inventory: one row per site, CSV (a header row names the columns) or YAML (a list of
 * mappings, or `sites:` holding one). Each value knows where it came from, so a problem names the
 * inventory's line and column.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { CsvError, parse } from 'csv-parse/sync';
import yaml from 'js-yaml';
import { UsageError } from '../base/errors.js';

/** the column holding the site id: the folder's name and the site-config's metadata.name */
export const SITE_COLUMN = 'site';
const SITE_ID = /^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/;

export interface InventoryRow {
  values: Record<string, string>;
  /** where the row starts, e.g. `inventory.csv line 4` */
  where: string;
  /** where one of its values is, e.g. `inventory.csv line 4, column 3 (ip)` */
  at(column: string): string;
}

export interface Inventory {
  columns: string[];
  rows: InventoryRow[];
}

function fromCsv(text: string, shown: string): Inventory {
  let columns: string[] = [];
  let records: { record: Record<string, string>; info: { lines: number } }[];
  try {
    records = parse(text, {
      columns: (header: string[]) => (columns = header),
      info: true,
      skip_empty_lines: true,
      trim: true,
      comment: '#',
    });
  } catch (err) {
    if (err instanceof CsvError) throw new UsageError(`${shown}: ${err.message}`);
    throw err;
  }
  return {
    columns,
    rows: records.map(({ record, info }) => ({
      values: record,
      where: `${shown} line ${info.lines}`,
      at: (column) => `${shown} line ${info.lines}, column ${columns.indexOf(column) + 1} (${column})`,
    })),
  };
}

function fromYaml(data: Buffer, shown: string): Inventory {
  let doc: unknown;
  try {
    doc = yaml.load(data.toString('utf8'), { schema: yaml.CORE_SCHEMA, filename: shown });
  } catch (err) {
    if (!(err instanceof yaml.YAMLException)) throw err;
    throw new UsageError(`${shown}: not valid YAML: ${err.reason} (line ${(err.mark?.line ?? 0) + 1})`);
  }
  if (doc && typeof doc === 'object' && !Array.isArray(doc) && 'sites' in doc) doc = (doc as { sites: unknown }).sites;
  if (!Array.isArray(doc)) throw new UsageError(`${shown}: expected a list of sites (or sites: holding one)`);
  const columns = new Set<string>();
  const rows = doc.map((entry, i): InventoryRow => {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry))
      throw new UsageError(`${shown}: $[${i}]: expected a mapping of column to value`);
    const values: Record<string, string> = {};
    for (const [key, value] of Object.entries(entry as Record<string, unknown>)) {
      if (value !== null && typeof value === 'object')
        throw new UsageError(`${shown}: $[${i}].${key}: expected a plain value, not a list or mapping`);
      values[key] = value === null ? '' : String(value);
      columns.add(key);
    }
    return { values, where: `${shown}: $[${i}]`, at: (column) => `${shown}: $[${i}].${column}` };
  });
  return { columns: [...columns], rows };
}

export async function readInventory(file: string): Promise<Inventory> {
  let data: Buffer;
  try {
    data = await readFile(file);
  } catch (err) {
    throw new UsageError(`--inventory: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const shown = path.basename(file);
  const inventory = /\.ya?ml$/i.test(file) ? fromYaml(data, shown) : fromCsv(data.toString('utf8'), shown);
  if (!inventory.columns.includes(SITE_COLUMN))
    throw new UsageError(`${shown}: no "${SITE_COLUMN}" column: each row needs its site id`);
  return inventory;
}

/** Problems a row has before any template is rendered: its site id, and one id used twice. */
export function rowProblems(inventory: Inventory): Map<InventoryRow, string> {
  const problems = new Map<InventoryRow, string>();
  const seen = new Map<string, InventoryRow>();
  for (const row of inventory.rows) {
    const site = row.values[SITE_COLUMN] ?? '';
    if (!SITE_ID.test(site))
      problems.set(
        row,
        `${row.at(SITE_COLUMN)}: "${site}" is not a site id (1-63 lowercase letters, digits, ".", "_", "-")`,
      );
    else if (seen.has(site))
      problems.set(row, `${row.at(SITE_COLUMN)}: site ${site} is also on ${seen.get(site)!.where}`);
    else seen.set(site, row);
  }
  return problems;
}
