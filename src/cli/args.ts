/** Command-line parsing: one table of options, shared by every command. */
import { parseArgs } from 'node:util';
import { UsageError } from '../base/errors.js';
import { DEFAULT_HEALTH_TIMEOUT_SECONDS } from '../base/timeouts.js';

export const OPTIONS = {
  root: { type: 'string', default: '/' },
  'state-dir': { type: 'string', default: '/var/lib/sno-relocate' },
  kubeconfig: { type: 'string' },
  'log-level': { type: 'string', default: 'info' },
  'log-format': { type: 'string', default: 'text' },
  output: { type: 'string', short: 'o' },
  only: { type: 'string' },
  skip: { type: 'string' },
  wait: { type: 'string', default: '0' },
  console: { type: 'string' },
  'health-timeout': { type: 'string', default: String(DEFAULT_HEALTH_TIMEOUT_SECONDS) },
  'health-stable': { type: 'string', default: '120' },
  once: { type: 'boolean', default: false },
  translate: { type: 'boolean', default: false },
  inventory: { type: 'string' },
  template: { type: 'string' },
  iso: { type: 'boolean', default: false },
  'hub-objects': { type: 'string' },
  placement: { type: 'string' },
  kubeconfigs: { type: 'string' },
  concurrency: { type: 'string', default: '32' },
  timeout: { type: 'string', default: '5' },
  key: { type: 'string' },
  site: { type: 'string' },
  user: { type: 'string' },
  out: { type: 'string' },
  'not-after': { type: 'string' },
  'bind-machine-id': { type: 'string' },
  'bind-serial': { type: 'string' },
  'metrics-address': { type: 'string', default: '127.0.0.1:9464' },
  'record-events': { type: 'string' },
  replay: { type: 'string' },
  manifests: { type: 'string' },
  'install-config': { type: 'string' },
  'internal-ip': { type: 'string' },
  image: { type: 'string' },
  trust: { type: 'string' },
  'shelf-days': { type: 'string', default: '30' },
  'power-off': { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
  version: { type: 'boolean', short: 'V', default: false },
} as const;

type Parsed = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
export type Flags = Parsed['values'];

export interface Invocation {
  command: string | undefined;
  positionals: string[];
  flags: Flags;
}

export function parseCommandLine(argv: readonly string[]): Invocation {
  let parsed: Parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\nRun 'sno-relocate --help' for usage.`);
  }
  const [command, ...positionals] = parsed.positionals;
  return { command, positionals, flags: parsed.values };
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
