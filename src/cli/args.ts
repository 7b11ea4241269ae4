/** Command-line parsing: the table of every option; which of them each command takes is in commands/options.ts. */
import { parseArgs } from 'node:util';
import { UsageError } from '../base/errors.js';
import { commandSpec } from './commands/options.js';
import { OPTIONS } from './option-table.js';

type Parsed = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
/** every option, typed from its declaration: a string, or a boolean for a switch; set when it has a default */
export type Flags = Parsed['values'];

/**
 * One command line. A handler declares `Invocation<OptionsOf<'its command'>>` and so sees only the
 * options its command takes: a handler that reads another does not compile.
 */
export interface Invocation<Option extends keyof Flags = keyof Flags> {
  command: string | undefined;
  positionals: string[];
  flags: Pick<Flags, Option>;
}

/** every option at its default: what a command sees of the options it does not take */
const DEFAULTS: Flags = parseArgs({ args: [], options: OPTIONS, allowPositionals: true, strict: true }).values;

/**
 * The command line of one command. Each command takes the options its spec declares
 * (commands/options.ts), and --help and --version; any other is a usage error that names the command.
 */
export function parseCommandLine(argv: readonly string[]): Invocation {
  const args = [...argv];
  // a first, lenient pass finds the command words, whatever options surround them
  const loose = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: false, tokens: true });
  const name = loose.positionals[0];
  // `help COMMAND` is COMMAND --help, and takes no other option
  const spec = name === 'help' ? undefined : commandSpec(loose.positionals);
  if (name !== undefined && name !== 'help' && !spec)
    throw new UsageError(`unknown command "${name}"; run 'sno-relocate --help'`);
  const takes = new Set<string>(['help', 'version', ...(spec?.options ?? [])]);
  for (const token of loose.tokens) {
    if (token.kind !== 'option' || takes.has(token.name)) continue;
    if (!spec) throw new UsageError(`${token.rawName} needs a command; run 'sno-relocate --help'`);
    const what = token.name in OPTIONS ? 'does not take' : 'has no option';
    throw new UsageError(
      `${spec.name} ${what} ${token.rawName}; run 'sno-relocate ${spec.name} --help' for its options`,
    );
  }
  let parsed;
  try {
    const options = Object.fromEntries(Object.entries(OPTIONS).filter(([option]) => takes.has(option)));
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${spec?.name ?? 'sno-relocate'}: ${(err as Error).message}`);
  }
  const [command, ...positionals] = parsed.positionals;
  return { command, positionals, flags: { ...DEFAULTS, ...parsed.values } as Flags };
}

export function oneOf<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag}: "${value}" is not one of ${allowed.join(', ')}`);
}

export function seconds(flag: string, value: string | undefined): number {
  const n = Number(value);
  if (value === undefined || !/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new UsageError(`${flag}: expected a whole number of seconds, got "${value}"`);
  return n;
}

export function atMostOnePath(command: string, positionals: string[]): string | undefined {
  if (positionals.length > 1) throw new UsageError(`${command} takes at most one PATH, got ${positionals.length}`);
  return positionals[0];
}
