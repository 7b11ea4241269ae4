/**
 * The handful of error classes the agent raises. Each knows the exit code it
 * maps to, so only the CLI entry point turns them into a process exit.
 */
import type { Finding } from './findings.js';

export const ExitCode = {
  ok: 0,
  stepFailed: 1,
  usage: 2,
  refused: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface ErrorDetails {
  step?: string;
  /** whether running again (the next boot, a retry) can help */
  retryable?: boolean;
  cause?: unknown;
}

export abstract class SnoRelocateError extends Error {
  abstract readonly exitCode: ExitCode;
  readonly step: string | undefined;
  readonly retryable: boolean;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.step = details.step;
    this.retryable = details.retryable ?? false;
  }
}

/** Bad command line. */
export class UsageError extends SnoRelocateError {
  readonly exitCode = ExitCode.usage;
}

/** The site-config failed validation: nothing on the host was changed. */
export class ConfigError extends SnoRelocateError {
  readonly exitCode = ExitCode.usage;
  constructor(
    message: string,
    readonly findings: readonly Finding[] = [],
  ) {
    super(message);
  }
}

/** Untrusted site-config, or host state that conflicts with the plan. */
export class RefusedError extends SnoRelocateError {
  readonly exitCode = ExitCode.refused;
}

/** A step failed while applying; the state is kept and the next run resumes. */
export class StepError extends SnoRelocateError {
  readonly exitCode = ExitCode.stepFailed;
}

/** A subprocess exited badly. */
export class CommandError extends StepError {
  constructor(
    message: string,
    readonly command: string,
    readonly exit: number | null,
    readonly stderr: string,
    details: ErrorDetails = {},
  ) {
    super(message, details);
  }
}

/** A step applied but its result did not check out. */
export class VerificationError extends StepError {}

/** A step's change did not check out and was undone: the node is as it was before the step. */
export class RolledBackError extends StepError {}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function exitCodeOf(err: unknown): ExitCode {
  return err instanceof SnoRelocateError ? err.exitCode : ExitCode.stepFailed;
}
