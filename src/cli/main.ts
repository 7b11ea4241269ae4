/**
 * The entry point: the only place that prints a command's result and decides
 * the exit code. What it prints may quote a stick or the cluster: control
 * characters other than newlines and tabs are escaped. Each command's modules
 * load when that command runs, so `--version` and `--help` evaluate none of
 * them (the Kubernetes client, the watcher, the steps): a test counts the modules they load.
 */
import { errorMessage, exitCodeOf, UsageError } from '../base/errors.js';
import { scrubText } from '../log/redact.js';
import { safeText } from '../log/safe-text.js';
import { type Invocation, parseCommandLine } from './args.js';
import { commandSpec } from './commands/options.js';
import type { CommandResult } from './commands/result.js';

type Command = (inv: Invocation) => Promise<CommandResult>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  validate: async () => (await import('./commands/validate.js')).validateCommand,
  plan: async () => (await import('./commands/plan.js')).planCommand,
  run: async () => (await import('./commands/run.js')).runCommand,
  status: async () => (await import('./commands/status.js')).statusCommand,
  'support-bundle': async () => (await import('./commands/support-bundle.js')).supportBundleCommand,
  keygen: async () => (await import('./commands/keygen.js')).keygenCommand,
  sign: async () => (await import('./commands/sign.js')).signCommand,
  watch: async () => (await import('./commands/watch.js')).watchCommand,
  render: async () => (await import('./commands/render.js')).renderCommand,
  fleet: async () => (await import('./commands/fleet.js')).fleetCommand,
  credentials: async () => (await import('./commands/credentials.js')).credentialsCommand,
  gate: async () => (await import('./commands/gate.js')).gateCommand,
  factory: async () => (await import('./commands/factory.js')).factoryCommand,
};

/** The overview, or one command's help: only run's and plan's, which list the steps, load them. */
async function helpFor(words: readonly (string | undefined)[]): Promise<string> {
  const { HELP, commandHelp } = await import('./help.js');
  const spec = words[0] === undefined ? undefined : commandSpec(words as string[]);
  if (!spec) {
    if (words[0] !== undefined) throw new UsageError(`unknown command "${words[0]}"; run 'sno-relocate --help'`);
    return HELP;
  }
  return commandHelp(spec, spec.listsSteps && (await import('../steps/index.js')).STEPS);
}

async function main(argv: readonly string[]): Promise<number> {
  let inv: Invocation;
  try {
    inv = parseCommandLine(argv);
    if (inv.flags.version) {
      const { AGENT_VERSION } = await import('../base/version.js');
      return (void process.stdout.write(`sno-relocate ${AGENT_VERSION}\n`), 0);
    }
    if (inv.command === undefined || inv.command === 'help' || inv.flags.help) {
      const words = inv.command === 'help' ? inv.positionals : [inv.command, ...inv.positionals];
      process.stdout.write(await helpFor(words));
      return inv.command === undefined && !inv.flags.help ? 2 : 0;
    }
    const load = COMMANDS[inv.command];
    if (!load) throw new UsageError(`unknown command "${inv.command}"; run 'sno-relocate --help'`);
    const result = await (await load())(inv);
    process.stdout.write(safeText(result.stdout));
    await result.afterOutput?.();
    return result.exitCode;
  } catch (err) {
    process.stderr.write(`sno-relocate: ${safeText(scrubText(errorMessage(err)))}\n`);
    return exitCodeOf(err);
  }
}

void main(process.argv.slice(2)).then((code) => process.exit(code));
