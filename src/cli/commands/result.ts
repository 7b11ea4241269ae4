import type { ExitCode } from '../../base/errors.js';

/** What a command hands back to the entry point, which alone prints it and exits. */
export interface CommandResult {
  exitCode: ExitCode;
  stdout: string;
  /** what comes once stdout is written (powering the node off: whoever reads the output sees it first) */
  afterOutput?: () => Promise<void>;
}
