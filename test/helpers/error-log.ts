/**
 * Every tier fails a test that logs an unexpected `error`-level line: the in-memory loggers of the
 * cluster and node tiers and the CLI runs report what they see here, and a hook registered for every
 * test file (error-log-hook.ts, vitest.config.ts setupFiles) fails the test after it. This module
 * imports nothing from vitest, so the demo can use the same harness outside a test run.
 * The engine's report of a stopped run (stepFailed, runFailed, runRefused) always comes with the
 * run's rejection, which the test sees anyway, and a CLI run that exits non-zero is expected to say
 * why at error level; any other error line a test means to cause it names with allowErrorLog.
 */
const seen: string[] = [];
let allowed: RegExp[] = [];

/** pino's level for `error` */
const ERROR = 50;
/** the engine's events for a run that stopped: the run rejects with the same reason */
const STOPPED = new Set(['stepFailed', 'runFailed', 'runRefused']);

/** a JSON log line from an in-memory logger */
export function noteLogLine(line: string): void {
  const entry = JSON.parse(line) as { level?: number; event?: string };
  if ((entry.level ?? 0) >= ERROR && !STOPPED.has(entry.event ?? '')) seen.push(line.trim());
}

/** the text log a CLI run wrote; `exitCode` 0 means nothing was expected to go wrong */
export function noteCliOutput(stderr: string, exitCode: number | null): void {
  if (exitCode !== 0) return;
  for (const line of stderr.split('\n')) if (/^\S+ (ERROR|FATAL) /.test(line)) seen.push(line);
}

/** error lines the current test expects (they are then not a failure) */
export function allowErrorLog(...patterns: RegExp[]): void {
  allowed.push(...patterns);
}

/** the lines seen since the last call that no allowErrorLog pattern expected; starts the next test afresh */
export function takeUnexpectedErrorLines(): string[] {
  const unexpected = seen.filter((l) => !allowed.some((p) => p.test(l)));
  seen.length = 0;
  allowed = [];
  return unexpected;
}
