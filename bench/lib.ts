/** Small helpers shared by the benchmarks: wall-clock medians of repeated commands, peak RSS. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The executable the benchmarks run: dist/sno-relocate, or another build named by BENCH_BINARY
 * (to measure an older build with the same scripts, for a before/after).
 */
export const BENCH_BINARY = process.env.BENCH_BINARY ?? path.join(REPO, 'dist/sno-relocate');

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

export interface CommandSpec {
  name: string;
  argv: string[];
  env?: Record<string, string>;
  /** exit codes that count as success (default 0 only) */
  okCodes?: readonly number[];
}

/**
 * Runs each command `runs` times, in turns (a, b, c, a, b, c, ...) after one warm-up round, so a
 * change in the machine's load falls on every command alike; fails loudly on an unexpected exit.
 */
export function timeCommands(specs: readonly CommandSpec[], runs: number): Timing[] {
  const once = (spec: CommandSpec) => {
    const started = process.hrtime.bigint();
    const r = spawnSync(spec.argv[0]!, spec.argv.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...spec.env },
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (!(spec.okCodes ?? [0]).includes(r.status ?? -1))
      throw new Error(`${spec.name}: exit ${r.status}: ${r.stderr.toString()}`);
    return ms;
  };
  specs.forEach(once);
  const samples = specs.map((): number[] => []);
  for (let run = 0; run < runs; run++) specs.forEach((spec, i) => samples[i]!.push(once(spec)));
  return specs.map((spec, i) => ({
    name: spec.name,
    medianMs: median(samples[i]!),
    minMs: Math.min(...samples[i]!),
    maxMs: Math.max(...samples[i]!),
    runs,
  }));
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
