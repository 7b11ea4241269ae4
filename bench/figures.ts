/**
 * The table of docs/performance.md: each benchmark reports its figures with reportFigure, and
 * `npm run bench` (run-all.ts) writes them into the table, one row per figure, found by what it
 * measures and the benchmark that measured it. A row no benchmark of the run reported keeps its
 * figures; a figure without a row gets a new one.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Figure {
  /** what is measured: the row's first cell, which finds the row again on the next run */
  what: string;
  target?: string;
  measured: string;
  baseline?: string;
}

/** a figure as run-all.ts collects it: with the benchmark that reported it (`bench/cli`) */
export interface Reported extends Figure {
  by: string;
}

export const PERFORMANCE_DOC = path.join(path.dirname(fileURLToPath(import.meta.url)), '../docs/performance.md');
const BEGIN = '<!-- performance: written by npm run bench (bench/run-all.ts) -->';
const END = '<!-- end of performance -->';
const HEADER = ['what', 'measured by', 'target', 'measured (median)', 'baseline in the same run'];

/** Reports a figure to run-all.ts (through the file it names in BENCH_FIGURES); run alone, a benchmark only prints. */
export function reportFigure(figure: Figure): void {
  const file = process.env.BENCH_FIGURES;
  if (file) appendFileSync(file, `${JSON.stringify(figure)}\n`);
}

const cells = (row: string): string[] =>
  row
    .replace(/^\|\s?/, '')
    .replace(/\s?\|$/, '')
    .split(/ (?<!\\)\| ?/)
    .map((c) => c.trim());
const row = (values: readonly string[]): string =>
  `| ${values.map((v) => v.replace(/(?<!\\)\|/g, '\\|').replace(/\n/g, ' ')).join(' | ')} |`;

/** docs/performance.md's text with the reported figures written into its table. */
export function withFigures(doc: string, figures: readonly Reported[]): string {
  const start = doc.indexOf(BEGIN);
  const stop = doc.indexOf(END);
  if (start < 0 || stop < start) throw new Error(`docs/performance.md lacks ${BEGIN} ... ${END}`);
  const rows = doc
    .slice(start + BEGIN.length, stop)
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .slice(2)
    .map(cells);
  for (const f of figures) {
    const values = [f.what, f.by, f.target ?? '', f.measured, f.baseline ?? ''];
    const at = rows.findIndex((r) => r[0] === f.what && r[1] === f.by);
    if (at >= 0) rows[at] = values;
    else rows.push(values);
  }
  const table = [row(HEADER), row(HEADER.map(() => '---')), ...rows.map(row)].join('\n');
  return `${doc.slice(0, start + BEGIN.length)}\n${table}\n${doc.slice(stop)}`;
}
