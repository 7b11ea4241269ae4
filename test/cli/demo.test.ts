/**
 * The README's demo command on a fresh clone: a `git clone` of this repository into a temporary
 * folder, without node_modules, then the command exactly as the README's "Two commands" block gives
 * it. It installs its packages itself (from the npm cache when it can), relocates the example on a
 * temporary node and cluster, shows status, watch --once and a second run, and leaves nothing behind,
 * also when interrupted.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STEPS } from '../../src/steps/index.js';
import { REPO } from '../helpers/cli.js';
import { missingBinaries } from '../kube/cluster.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1' || missingBinaries().length > 0;

/** The demo's line of the README's "Two commands" block, without its comment. */
function readmeDemoCommand(): string {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const block = /## Two commands\n+```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
  const line = block.split('\n').find((l) => l.startsWith('npm run demo'));
  if (!line) throw new Error('the README\'s "Two commands" block has no `npm run demo` line');
  return line.replace(/#.*$/, '').trim();
}

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/** Runs the command in its own process group; `interruptWhen` sends that group SIGINT, as Ctrl-C does. */
function demo(cwd: string, interruptWhen?: RegExp): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', `exec ${readmeDemoCommand()} 2>&1`], {
      cwd,
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '' },
    });
    let output = '';
    let interrupted = false;
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (interruptWhen && !interrupted && interruptWhen.test(output)) {
        interrupted = true;
        process.kill(-child.pid!, 'SIGINT');
      }
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, output }));
  });
}

const folders = (output: string) => [...new Set(output.match(/\/tmp\/sno-relocate-(?:demo|kube)-\w+/g) ?? [])];

describe.skipIf(kubeSkipped)('npm run demo on a fresh clone', () => {
  let clone: string;
  beforeAll(() => {
    clone = path.join(mkdtempSync(path.join(tmpdir(), 'sno-relocate-clone-')), 'sno-relocate');
    const cloned = spawnSync('git', ['clone', '--quiet', REPO, clone], { encoding: 'utf8' });
    expect(cloned.status, cloned.stderr).toBe(0);
  });
  afterAll(() => rmSync(path.dirname(clone), { recursive: true, force: true }));

  it('installs its packages, relocates the example, shows status and watch --once, and a second run does nothing', async () => {
    expect(existsSync(path.join(clone, 'node_modules'))).toBe(false);
    const { code, output } = await demo(clone);
    expect(code, output).toBe(0);
    expect(output).toContain('npm install');
    expect(existsSync(path.join(clone, 'node_modules/.bin/tsx'))).toBe(true);

    const [first, rest] = output.split('\n$ sno-relocate status');
    // the recommended configuration: a signed folder, the site's admin client CA, the factory's kubeconfig revoked
    expect(first).toMatch(/^\$ sno-relocate keygen --out \$DEMO\/factory-demo$/m);
    expect(first).toMatch(/^signed 4 file\(s\) of site store-0042 into .*site-config\.sig/m);
    // the technician's console during the first run: every step in order, then done
    const consoleLines = first!.split('\n').filter((l) => l.startsWith('  console | '));
    expect(consoleLines).toEqual([
      ...STEPS.map((s, i) => `  console | sno-relocate: [${i + 1}/${STEPS.length}] ${s.name} ...`),
      '  console | sno-relocate: done: site store-0042 is configured',
    ]);
    expect(first).toContain('site store-0042: succeeded');

    const [status, watch, second] = rest!.split(/\n\$ sno-relocate (?:watch --once|run) /);
    expect(status).toContain('Result:   succeeded');
    expect(status).toMatch(/^access +done .*the factory's admin\.kubeconfig is refused at this site$/m);
    expect(status).toContain('Factory admin kubeconfig: refused at this site');
    for (const step of STEPS) expect(status).toMatch(new RegExp(`^${step.name} +done `, 'm'));
    expect(watch).toMatch(/^Cluster: +https:\/\/127\.0\.0\.1:\d+\nHealth: +(healthy|degraded)\n/m);
    expect(watch).not.toMatch(/^error /m);
    // the second run: every step's journal line says it has nothing to do
    const idle = [...second!.matchAll(/^ {2}journal \| \[([\w-]+)\] nothing to do: /gm)].map((m) => m[1]);
    expect(idle, second).toEqual(STEPS.map((s) => s.name));
    expect(second).toContain('site store-0042: succeeded');
    expect(output.trimEnd().endsWith('Demo done.')).toBe(true);
    expect(output).not.toContain('c3RvcmU0Mjpub3QtYS1yZWFsLXBhc3N3b3Jk');

    expect(folders(output).length).toBeGreaterThanOrEqual(2);
    for (const folder of folders(output)) expect(existsSync(folder), folder).toBe(false);
    expect(spawnSync('git', ['status', '--porcelain'], { cwd: clone, encoding: 'utf8' }).stdout).toBe('');
  }, 900_000);

  it('cleans up on Ctrl-C: the API server, the bus and its temporary folders are gone', async () => {
    const { code, signal, output } = await demo(clone, /console \| sno-relocate: \[3\/\d+\]/);
    // npm passes the signal on and ends by it; the demo below it exits 130
    expect(code === 130 || signal === 'SIGINT', output).toBe(true);
    expect(output).toMatch(/\(SIGINT: stopping the API server and the bus, removing \/tmp\/sno-relocate-demo-\w+\)/);
    const left = folders(output);
    expect(left.length).toBeGreaterThanOrEqual(2);
    for (const folder of left) {
      expect(existsSync(folder), folder).toBe(false);
      const processes = spawnSync('pgrep', ['-f', folder], { encoding: 'utf8' }).stdout;
      expect(processes, `processes still using ${folder}`).toBe('');
    }
  }, 300_000);
});
