/**
 * The long-running `sno-relocate watch` from source, as systemd runs it: a child process whose
 * stderr (the log) is collected, stopped with SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { REPO } from '../node/context.js';

export interface WatchProcess {
  child: ChildProcess;
  /** stderr so far */
  log(): string;
  /** SIGTERM, then the exit code */
  stop(): Promise<number | null>;
}

export function startWatch(args: readonly string[], env: Record<string, string> = {}): WatchProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/cli/main.ts'), 'watch', ...args], {
    cwd: REPO,
    env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    log: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
