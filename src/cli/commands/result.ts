import type { ExitCode } from '../../base/errors.js';

/** What a command hands back to the entry point, which alone prints it and exits. */
export interface CommandResult {
  exitCode: ExitCode;
  stdout: string;
}
