/** Findings for people: a table for `watch --once` and `status`, with how long each has held. */
import { safeLine } from '../log/safe-text.js';
import type { Finding, Health } from './model.js';

/** 45s, 5m, 2h10m, 3d */
export function formatAge(fromIso: string | undefined, now: Date): string {
  if (!fromIso) return '';
  const s = Math.max(0, Math.floor((now.getTime() - Date.parse(fromIso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400)
    return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? `${Math.floor((s % 3600) / 60)}m` : ''}`;
  return `${Math.floor(s / 86400)}d`;
}

/** Aligned columns; a cell may quote the cluster, so each is one line with its controls escaped. */
export function table(cells: string[][]): string[] {
  const rows = cells.map((r) => r.map(safeLine));
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

export function renderFindings(findings: readonly Finding[], now: Date): string[] {
  if (findings.length === 0) return ['No findings.'];
  const rows = [['SEVERITY', 'COMPONENT', 'OBJECT', 'FOR', 'REASON']];
  for (const f of findings) rows.push([f.severity, f.component, f.object, formatAge(f.since, now), f.reason]);
  const lines = table(rows);
  const hints = [
    ...new Set(
      findings.filter((f) => f.hint && f.severity !== 'info').map((f) => safeLine(`  ${f.object}: ${f.hint}`)),
    ),
  ];
  if (hints.length > 0) lines.push('', 'Hints:', ...hints);
  return lines;
}

export function renderHealth(health: Health, findings: readonly Finding[], now: Date, header: string[] = []): string {
  return `${[...header, `Health:   ${health}`, '', ...renderFindings(findings, now)].join('\n')}\n`;
}
