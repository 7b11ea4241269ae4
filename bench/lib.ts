/** Small helpers shared by the benchmarks: wall-clock medians of repeated commands, peak RSS. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface Timing {
  name: string;
  medianMs: number;
  minMs: number;
  maxMs: number;
  runs: number;
}

/** Runs a command `runs` times after one warm-up; fails loudly if it does not exit 0. */
export function timeCommand(name: string, argv: string[], runs: number, env: Record<string, string> = {}): Timing {
  const once = () => {
    const started = process.hrtime.bigint();
    const r = spawnSync(argv[0]!, argv.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...env },
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (r.status !== 0) throw new Error(`${name}: exit ${r.status}: ${r.stderr.toString()}`);
    return ms;
  };
  once();
  const samples = Array.from({ length: runs }, once);
  return { name, medianMs: median(samples), minMs: Math.min(...samples), maxMs: Math.max(...samples), runs };
}

/** Peak resident memory of a command in MB, from GNU time (Debian package `time`). */
export function peakRssMb(argv: string[], env: Record<string, string> = {}): number {
  if (!existsSync('/usr/bin/time')) throw new Error('/usr/bin/time is missing: apt-get install time');
  const r = spawnSync('/usr/bin/time', ['-f', '%M', ...argv], { encoding: 'utf8', env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return Number(r.stderr.trim().split('\n').at(-1)) / 1024;
}

export function printTable(title: string, rows: (string | number)[][]): void {
  const text = rows.map((r) => r.map((c) => (typeof c === 'number' ? c.toFixed(1) : c)));
  const widths = text[0]!.map((_, i) => Math.max(...text.map((r) => r[i]!.length)));
  console.log(`\n${title}`);
  for (const r of text) console.log(`  ${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}`);
}
