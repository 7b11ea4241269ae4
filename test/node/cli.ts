/**
 * The agent's command line from source, as a user runs it: a separate process with its exit code,
 * stdout and stderr, against a temporary root and the test stand-ins (nmstatectl stub, private D-Bus).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { REPO } from './context.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runAgent(args: readonly string[], env: Record<string, string>, options: { prefix?: string[] } = {}): CliResult {
  const argv = [...(options.prefix ?? []), process.execPath, '--import', 'tsx', path.join(REPO, 'src/cli/main.ts'), ...args];
  const result = spawnSync(argv[0]!, argv.slice(1), {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '', ...env },
    timeout: 120_000,
  });
  if (result.error) throw result.error;
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Writes a site-config folder: site-config.yaml with the given spec, and any files beside it. */
export function writeSiteFolder(dir: string, name: string, spec: Record<string, unknown>, files: Record<string, string> = {}): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'site-config.yaml'), yaml.dump({ apiVersion: 'sno-relocate/v1', kind: 'SiteConfig', metadata: { name }, spec }));
  for (const [file, content] of Object.entries(files)) writeFileSync(path.join(dir, file), content);
  return dir;
}
