/**
 * Fleet rendering with the built executable: 1,000 sites rendered from an inventory, validated and
 * signed in one `render` process (target < 10 s, folders), against the baseline of rendering the
 * same sites with one `sno-relocate validate` and one `sign` process per site, measured on a sample
 * of sites in the same run and extrapolated to 1,000. ISO packing is measured on its own.
 * `npx tsx bench/render.ts [runs] [sample]`
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { BINARY, REPO } from '../test/helpers/cli.js';
import { reportFigure } from './figures.js';
import { median, printTable } from './lib.js';

const runs = Number(process.argv[2] ?? 3);
const sample = Number(process.argv[3] ?? 20);
const SITES = 1000;
const ISO_SITES = 100;
const work = mkdtempSync(path.join(tmpdir(), 'bench-render-'));
const template = path.join(REPO, 'examples/fleet/template');

/** CPU seconds (user + system) of the last command run: wall time on a shared machine depends on its load */
let lastCpuS = 0;

function run(argv: string[]): number {
  const started = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S', BINARY, ...argv], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status}: ${r.stderr.toString()}`);
  const [user, system] = r.stderr.toString().trim().split('\n').at(-1)!.split(' ').map(Number);
  lastCpuS = user! + system!;
  return Number(process.hrtime.bigint() - started) / 1e6;
}

function inventory(count: number): string {
  const rows = ['site,domain,ip,prefix,gateway,dns,registry'];
  for (let i = 0; i < count; i += 1) {
    const [a, b] = [Math.floor(i / 250) + 10, i % 250];
    rows.push(
      `store-${i}.x,store${i}.example.com,10.${a}.${b}.20,24,10.${a}.${b}.1,10.${a}.${b}.53,registry.store${i}.example.com:5000`,
    );
  }
  const file = path.join(work, `inventory-${count}.csv`);
  writeFileSync(file, `${rows.join('\n')}\n`);
  return file;
}

/** The baseline's per-site work: the folder laid out by hand (as a script would), then validate and sign. */
function baselineSite(i: number, key: string): number {
  const dir = path.join(work, 'baseline', `store-${i}`);
  cpSync(path.join(work, 'folders', 'store-0.x'), dir, { recursive: true });
  rmSync(path.join(dir, 'site-config.sig'));
  writeFileSync(
    path.join(dir, 'site-config.yaml'),
    readFileSync(path.join(dir, 'site-config.yaml'), 'utf8').replaceAll('store-0.x', `store-${i}.x`),
  );
  return run(['validate', dir]) + run(['sign', '--key', key, dir]);
}

try {
  run(['keygen', '--out', path.join(work, 'factory')]);
  const key = path.join(work, 'factory.key');
  const big = inventory(SITES);
  const renders: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    rmSync(path.join(work, 'folders'), { recursive: true, force: true });
    renders.push(
      run(['render', '--inventory', big, '--template', template, '--out', path.join(work, 'folders'), '--key', key]),
    );
    cpu.push(lastCpuS);
  }
  const perSite = Array.from({ length: sample }, (_, i) => baselineSite(i, key));
  const baselineMs = median(perSite) * SITES;
  const small = inventory(ISO_SITES);
  const isos: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    rmSync(path.join(work, 'isos'), { recursive: true, force: true });
    isos.push(
      run([
        'render',
        '--inventory',
        small,
        '--template',
        template,
        '--out',
        path.join(work, 'isos'),
        '--key',
        key,
        '--iso',
      ]),
    );
  }
  const renderMs = median(renders);
  printTable(`render: ${SITES} sites, medians of ${runs} runs; baseline from ${sample} sites`, [
    ['what', 'median', 'target / ratio'],
    [`render ${SITES} sites, validated and signed (folders)`, `${(renderMs / 1000).toFixed(2)} s`, '< 10 s'],
    [
      `  CPU time of that process (user + system)`,
      `${median(cpu).toFixed(2)} s`,
      `load average ${loadavg()[0]!.toFixed(1)}`,
    ],
    [
      `baseline: validate + sign process per site (x${SITES})`,
      `${(baselineMs / 1000).toFixed(1)} s`,
      `${(baselineMs / renderMs).toFixed(0)}x slower`,
    ],
    [
      `render ${ISO_SITES} sites with --iso (xorriso per site)`,
      `${(median(isos) / 1000).toFixed(2)} s`,
      `${(median(isos) / ISO_SITES).toFixed(0)} ms a site`,
    ],
  ]);
  reportFigure({
    what: `\`render\`: ${SITES.toLocaleString('en')} sites rendered, validated and signed into folders, one process`,
    target: '< 10 s',
    measured: `${(renderMs / 1000).toFixed(2)} s wall (${median(cpu).toFixed(2)} s CPU)`,
    baseline: `one \`validate\` + \`sign\` process per site, from ${sample} sites: ${(baselineMs / 1000).toFixed(0)} s (${(baselineMs / renderMs).toFixed(0)}x)`,
  });
  reportFigure({
    what: `\`render --iso\`: ${ISO_SITES} sites, one xorriso image each`,
    measured: `${(median(isos) / 1000).toFixed(2)} s (${(median(isos) / ISO_SITES).toFixed(0)} ms a site)`,
  });
} finally {
  rmSync(work, { recursive: true, force: true });
}
