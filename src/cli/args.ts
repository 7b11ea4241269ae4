/** Command-line parsing: the table of every option; which of them each command takes is in commands/options.ts. */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { UsageError } from '../base/errors.js';
import { commandSpec } from './commands/options.js';
import { OPTIONS } from './option-table.js';

type Declared = typeof OPTIONS;
type ValueOf<D> = D extends { type: 'boolean' } ? boolean : D extends { type: 'number' } ? number : string;
/** every option, typed from its declaration: a string, a boolean for a switch, a number; set when it has a default */
export type Flags = {
  [Name in keyof Declared]: Declared[Name] extends { default: unknown }
    ? ValueOf<Declared[Name]>
    : ValueOf<Declared[Name]> | undefined;
};

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
const DEFAULTS = Object.fromEntries(
  Object.entries(OPTIONS).flatMap(([name, declared]) => ('default' in declared ? [[name, declared.default]] : [])),
) as Flags;

/** the table as node:util parseArgs reads it: a number is read as a string, then checked by `wholeNumber` */
const PARSED_AS: NonNullable<ParseArgsConfig['options']> = Object.fromEntries(
  Object.entries(OPTIONS).map(([name, declared]) => [
    name,
    declared.type === 'number'
      ? { type: 'string', ...('default' in declared && { default: String(declared.default) }) }
      : declared,
  ]),
);

/** A number option's value: a whole number within its declared bounds, or a usage error naming the flag. */
function wholeNumber(name: string, value: string): number {
  const { min = 0, max, unit } = OPTIONS[name as keyof Declared] as { min?: number; max?: number; unit?: string };
  const n = Number(value);
  if (/^\d+$/.test(value) && Number.isSafeInteger(n) && n >= min && (max === undefined || n <= max)) return n;
  const range = max === undefined ? `${min} or more` : `${min} to ${max}`;
  throw new UsageError(`--${name}: expected a whole number${unit ? ` of ${unit}` : ''}, ${range}, got "${value}"`);
}

/**
 * The command line of one command. Each command takes the options its spec declares
 * (commands/options.ts), and --help and --version; any other is a usage error that names the command.
 */
export function parseCommandLine(argv: readonly string[]): Invocation {
  const args = [...argv];
  // a first, lenient pass finds the command words, whatever options surround them
  const loose = parseArgs({ args, options: PARSED_AS, allowPositionals: true, strict: false, tokens: true });
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
    const options = Object.fromEntries(Object.entries(PARSED_AS).filter(([option]) => takes.has(option)));
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${spec?.name ?? 'sno-relocate'}: ${(err as Error).message}`);
  }
  const values = Object.entries(parsed.values).map(([name, value]) => [
    name,
    OPTIONS[name as keyof Declared].type === 'number' && typeof value === 'string' ? wholeNumber(name, value) : value,
  ]);
  const [command, ...positionals] = parsed.positionals;
  return { command, positionals, flags: { ...DEFAULTS, ...Object.fromEntries(values) } as Flags };
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

export function atMostOnePath(command: string, positionals: string[]): string | undefined {
  if (positionals.length > 1) throw new UsageError(`${command} takes at most one PATH, got ${positionals.length}`);
  return positionals[0];
}
