/**
 * Options per command: each command takes the options it declares, says which when asked
 * (`COMMAND --help`), and refuses any other by name. `--help` and `--version` load only the
 * command line's own modules: counted by a module loader hook on the sources.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { STEPS } from '../../src/steps/index.js';
import { EXAMPLE, REPO, runCli } from '../helpers/cli.js';

/** a loader hook, registered before main.ts loads, that prints every module file loaded to stderr */
const HOOK = `
import { writeSync } from 'node:fs';
export async function load(url, context, next) {
  if (url.startsWith('file:')) writeSync(2, 'LOADED ' + url + '\\n');
  return next(url, context);
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOK)}`)});`;

/** the modules of the repository (src/... or node_modules/<package>/...) that `args` loads */
function modulesLoaded(args: string[]): { files: string[]; stdout: string } {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--import', `data:text/javascript,${encodeURIComponent(REGISTER)}`, 'src/cli/main.ts', ...args],
    { cwd: REPO, encoding: 'utf8' },
  );
  expect(r.status, r.stderr).toBe(0);
  const files = [...r.stderr.matchAll(/^LOADED file:\/\/(.*)$/gm)].map((m) => path.relative(REPO, m[1]!));
  return { files: [...new Set(files)], stdout: r.stdout };
}

describe('--help and --version', () => {
  it.each(['--help', '--version', 'validate --help', 'factory seal --help'])(
    '%s loads no step, no Kubernetes client, no package at all',
    (line) => {
      const { files, stdout } = modulesLoaded(line.split(' '));
      expect(stdout).toMatch(/^(Usage:|sno-relocate)/m);
      expect(files.filter((f) => f.startsWith('src/steps/') || f.startsWith('src/kube/'))).toEqual([]);
      expect(files.filter((f) => f.includes('node_modules/'))).toEqual([]);
      // main.ts, package.json, args, the commands' declarations, help, and what they stand on
      expect(files.length).toBeLessThanOrEqual(10);
    },
  );
});

describe('options per command (single executable)', () => {
  it.each([
    [['validate', EXAMPLE, '--power-off'], 'validate does not take --power-off'],
    [['status', '--iso', '--placement', 'x/y'], 'status does not take --iso'],
    [['factory', 'check', '--power-off'], 'factory check does not take --power-off'],
    [['keygen', '--out', 'k', '--root', '/'], 'keygen does not take --root'],
    [['fleet', 'status', '--kubeconfigs', '.', '-o', 'json', '--only', 'routes'], 'fleet status does not take --only'],
    [['run', EXAMPLE, '--frob'], 'run has no option --frob'],
    [['sign', '--key'], "sign: Option '--key <value>' argument missing"],
    [['--root', '/'], '--root needs a command'],
  ])('%j is a usage error naming the command and how to see its options', (args, message) => {
    const r = runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stdout).toBe('');
  });

  it("prints a command's own help: its usage and the options it takes, and no other", () => {
    const r = runCli(['validate', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('sno-relocate validate [PATH]');
    for (const option of ['--root DIR', '--translate', '-o, --output', '--wait SECONDS'])
      expect(r.stdout).toContain(option);
    for (const option of ['--power-off', '--only', '--kubeconfigs', '--state-dir'])
      expect(r.stdout).not.toContain(option);
    expect(runCli(['help', 'validate']).stdout).toBe(r.stdout);
  });

  it('lists the steps, in order, in the help of the commands that take --only and --skip', () => {
    for (const command of ['run', 'plan']) {
      const r = runCli([command, '--help']);
      expect(r.code).toBe(0);
      const listed = r.stdout
        .slice(r.stdout.indexOf('Steps, in order'))
        .split('\n')
        .slice(1)
        .join(' ')
        .match(/[a-z][\w-]+(?=,|\s|$)/g)
        ?.filter((w) => STEPS.some((s) => s.name === w));
      expect(listed).toEqual(STEPS.map((s) => s.name));
    }
  });

  it('takes each option where the overview says it: --kubeconfig for watch, --wait for gate', () => {
    const r = runCli(['gate', '--root', '/nonexistent-root', '--wait', '0']);
    expect(r.stderr).not.toContain('does not take');
    const w = runCli(['watch', '--once', '--kubeconfig', '/nonexistent.kubeconfig']);
    expect(w.stderr).not.toContain('does not take');
    expect(w.code).toBe(1);
  });
});
