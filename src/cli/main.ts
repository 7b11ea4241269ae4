/**
 * The entry point: the only place that prints a command's result and decides
 * the exit code. What it prints may quote a stick or the cluster: control
 * characters other than newlines and tabs are escaped.
 */
import pkg from '../../package.json' with { type: 'json' };
import { errorMessage, exitCodeOf, UsageError } from '../base/errors.js';
import { scrubText } from '../log/redact.js';
import { safeText } from '../log/safe-text.js';
import { type Invocation, parseCommandLine } from './args.js';
import { HELP } from './help.js';
import { keygenCommand } from './commands/keygen.js';
import { planCommand } from './commands/plan.js';
import type { CommandResult } from './commands/result.js';
import { renderCommand } from './commands/render.js';
import { runCommand } from './commands/run.js';
import { signCommand } from './commands/sign.js';
import { statusCommand } from './commands/status.js';
import { validateCommand } from './commands/validate.js';
import { watchCommand } from './commands/watch.js';

const COMMANDS: Record<string, (inv: Invocation) => Promise<CommandResult>> = {
  validate: validateCommand,
  plan: planCommand,
  run: runCommand,
  status: statusCommand,
  keygen: keygenCommand,
  sign: signCommand,
  watch: watchCommand,
  render: renderCommand,
};

async function main(argv: readonly string[]): Promise<number> {
  let inv: Invocation;
  try {
    inv = parseCommandLine(argv);
    if (inv.flags.version) return (void process.stdout.write(`sno-relocate ${pkg.version}\n`), 0);
    if (inv.flags.help || inv.command === undefined || inv.command === 'help')
      return (void process.stdout.write(HELP), inv.command === undefined && !inv.flags.help ? 2 : 0);
    const command = COMMANDS[inv.command];
    if (!command) throw new UsageError(`unknown command "${inv.command}"; run 'sno-relocate --help'`);
    const result = await command(inv);
    process.stdout.write(safeText(result.stdout));
    return result.exitCode;
  } catch (err) {
    process.stderr.write(`sno-relocate: ${safeText(scrubText(errorMessage(err)))}\n`);
    return exitCodeOf(err);
  }
}

void main(process.argv.slice(2)).then((code) => process.exit(code));
