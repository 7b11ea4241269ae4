/** Subprocesses: argv logged at debug, output logged on failure, never through a shell. */
import { spawn } from 'node:child_process';
import { CommandError } from '../base/errors.js';
import type { Logger } from '../log/logger.js';
import { scrubText } from '../log/redact.js';

export interface ExecOptions {
  /** written to stdin; never logged */
  input?: string | Buffer;
  timeoutMs?: number;
  env?: Record<string, string>;
  /** return a non-zero exit instead of throwing */
  allowFailure?: boolean;
}

export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface Exec {
  run(command: string, args: readonly string[], options?: ExecOptions): Promise<ExecResult>;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const tail = (text: string, lines = 20): string => scrubText(text.trim().split('\n').slice(-lines).join('\n'));

export function createExec(log: Logger): Exec {
  return {
    run(command, args, options = {}) {
      const argv = [command, ...args].join(' ');
      log.debug({ argv: [command, ...args] }, `exec ${command}`);
      const started = performance.now();
      return new Promise<ExecResult>((resolve, reject) => {
        const child = spawn(command, args, {
          stdio: ['pipe', 'pipe', 'pipe'],
          env: { ...process.env, ...options.env },
          timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
          killSignal: 'SIGKILL',
        });
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        child.stdout.on('data', (d: Buffer) => out.push(d));
        child.stderr.on('data', (d: Buffer) => err.push(d));
        child.stdin.on('error', () => undefined);
        child.on('error', (e) =>
          reject(
            new CommandError(`cannot run ${command}: ${e.message}`, argv, null, '', { cause: e, retryable: false }),
          ),
        );
        child.on('close', (code, signal) => {
          const result = {
            code,
            stdout: Buffer.concat(out).toString('utf8'),
            stderr: Buffer.concat(err).toString('utf8'),
          };
          const durationMs = Math.round(performance.now() - started);
          if (code === 0 || options.allowFailure) {
            log.debug({ command, code, durationMs }, `exec ${command}: exit ${code}`);
            return resolve(result);
          }
          const why = signal ? `killed by ${signal}` : `exit ${code}`;
          log.warn(
            { command, code, durationMs, stderr: tail(result.stderr), stdout: tail(result.stdout) },
            `exec ${command}: ${why}`,
          );
          reject(
            new CommandError(
              `${command} failed (${why}): ${tail(result.stderr, 3) || tail(result.stdout, 3)}`,
              argv,
              code,
              result.stderr,
              { retryable: true },
            ),
          );
        });
        child.stdin.end(options.input ?? '');
      });
    },
  };
}
