/**
 * Runs the built single executable, as a user would: black-box, with its exit code, stdout and
 * stderr. `./build.sh` (run by `npm test`) makes it.
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { noteCliOutput } from './error-log.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BINARY = path.join(REPO, 'dist/sno-relocate');
export const EXAMPLE = path.join(REPO, 'examples/store-0042');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Before the executable in the command line: root without the capabilities that let it read any
 * file (util-linux's setpriv), so a file's mode 000 is unreadable to it as to any other user.
 */
export const WITHOUT_FILE_OVERRIDE = [
  'setpriv',
  '--bounding-set=-dac_override,-dac_read_search',
  '--inh-caps=-dac_override,-dac_read_search',
  '--',
];

export function runCli(
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number; prefix?: readonly string[] } = {},
): CliResult {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run ./build.sh first`);
  const [command, ...before] = [...(options.prefix ?? []), BINARY];
  const result = spawnSync(command!, [...before, ...args], {
    encoding: 'utf8',
    env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '', ...options.env },
    cwd: options.cwd ?? REPO,
    timeout: options.timeoutMs ?? 30_000,
  });
  if (result.error) throw result.error;
  noteCliOutput(result.stderr, result.status);
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** what a started process wrote and how it ended, once it has */
export function outputOf(child: ChildProcessWithoutNullStreams): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** runCli without blocking this process: for tests whose own servers must keep answering while it runs */
export function runCliAsync(args: readonly string[]): Promise<CliResult> {
  if (!existsSync(BINARY)) throw new Error(`${BINARY} is missing: run ./build.sh first`);
  return outputOf(spawn(BINARY, args, { cwd: REPO, env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '' } }));
}
