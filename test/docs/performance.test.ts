/** docs/performance.md's table is the one `npm run bench` writes (bench/figures.ts). */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PERFORMANCE_DOC, withFigures } from '../../bench/figures.js';
import { REPO } from '../helpers/cli.js';

const doc = readFileSync(PERFORMANCE_DOC, 'utf8');
const tableRows = (text: string) => text.split('\n').filter((l) => l.startsWith('| '));

describe('docs/performance.md', () => {
  it('holds its figures in the table as the bench writes it, each row naming a script that exists', () => {
    expect(withFigures(doc, [])).toBe(doc);
    const rows = tableRows(doc).slice(2);
    expect(rows.length).toBeGreaterThan(10);
    for (const row of rows) {
      const by = row.split(' | ')[1]!;
      expect(existsSync(path.join(REPO, by.endsWith('.sh') ? by : `${by}.ts`)), row).toBe(true);
    }
  });

  it('a run replaces the figures of the rows it measured, adds new ones and leaves the others', () => {
    const before = tableRows(doc);
    const after = withFigures(doc, [
      { by: 'bench/trust', what: 'fuzzing throughput', measured: '700 hostile folders a second' },
      { by: 'bench/trust', what: 'a new figure', target: '< 1 s', measured: '0.5 s | half', baseline: 'none' },
    ]);
    const rows = tableRows(after);
    expect(rows).toContain('| fuzzing throughput | bench/trust |  | 700 hostile folders a second |  |');
    expect(rows.at(-1)).toBe('| a new figure | bench/trust | < 1 s | 0.5 s \\| half | none |');
    expect(rows.length).toBe(before.length + 1);
    expect(rows.filter((r) => !r.startsWith('| fuzzing throughput') && !r.startsWith('| a new figure'))).toEqual(
      before.filter((r) => !r.startsWith('| fuzzing throughput')),
    );
    // the prose around the table is left as it is
    expect(after.slice(after.indexOf('<!-- end of performance -->'))).toBe(
      doc.slice(doc.indexOf('<!-- end of performance -->')),
    );
  });
});
