import type { ExitCode } from '../../engine/errors.js';

/** What a command hands back to the entry point, which alone prints it and exits. */
export interface CommandResult {
  exitCode: ExitCode;
  stdout: string;
}
