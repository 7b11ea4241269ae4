/** Command-line parsing: the table of every option; which of them each command takes is in commands/options.ts. */
import { parseArgs } from 'node:util';
import { UsageError } from '../base/errors.js';
import { DEFAULT_HEALTH_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { commandSpec } from './commands/options.js';

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

export type OptionName = Exclude<keyof typeof OPTIONS, 'help' | 'version'>;

/** Each option's value (empty for a switch) and what it does, for the help of the commands that take it. */
export const OPTION_HELP: Record<OptionName, readonly [value: string, does: string]> = {
  root: ['DIR', 'resolve every host path under DIR (default /)'],
  'state-dir': ['DIR', 'state folder (default /var/lib/sno-relocate)'],
  kubeconfig: ['FILE', "cluster access (default: the node's localhost kubeconfig, then $KUBECONFIG)"],
  'log-level': ['LEVEL', 'trace, debug, info, warn, error (default info)'],
  'log-format': ['FORMAT', 'text or json (default text)'],
  output: ['FORMAT', 'what to print: text (default), json, or yaml where the usage names it'],
  only: ['LIST', 'only these steps or groups (comma separated)'],
  skip: ['LIST', 'leave out these steps or groups'],
  wait: ['SECONDS', 'with no PATH, wait this long for a site-config to appear (default 0)'],
  console: ['DEVICE', 'where the one-line progress banner goes (default /dev/console under systemd)'],
  'health-timeout': [
    'SEC',
    `how long the health step waits for a healthy cluster (default ${DEFAULT_HEALTH_TIMEOUT_SECONDS})`,
  ],
  'health-stable': ['SEC', 'how long the cluster must stay settled before health calls it done (default 120)'],
  once: ['', 'one sync, print the findings and exit'],
  translate: ['', 'print the native site-config the input becomes instead of checking it'],
  inventory: ['FILE', 'the inventory: one row per site (CSV)'],
  template: ['DIR', 'the site folder template, filled in from each row'],
  iso: ['', 'pack each site folder as <site>.iso as well'],
  'hub-objects': ['DIR', 'also write the hub objects that deliver the site-configs (ManifestWorkReplicaSet)'],
  placement: ['NAMESPACE/NAME', 'the Placement the hub objects name (needs --hub-objects)'],
  kubeconfigs: ['DIR', 'one kubeconfig file per cluster'],
  concurrency: ['N', 'clusters read at once (default 32)'],
  timeout: ['SECONDS', 'how long to wait for each cluster (default 5)'],
  key: ['FILE', 'the private key that signs'],
  site: ['DIR', 'the site folder (its site-config names the client CA and the site CA)'],
  user: ['NAME', 'the user the kubeconfig authenticates as (default site-admin)'],
  out: ['PATH', 'where to write'],
  'not-after': ['DATE', 'the signature expires then (for example 2027-03-31)'],
  'bind-machine-id': ['ID', 'the signature holds only on the node with this /etc/machine-id'],
  'bind-serial': ['SERIAL', 'the signature holds only on the node with this serial number'],
  'metrics-address': ['HOST:PORT', 'where the Prometheus metrics are served (default 127.0.0.1:9464)'],
  'record-events': ['FILE', 'record the events watched, for --replay'],
  replay: ['FILE', 'replay a recording made with --record-events, without a cluster'],
  manifests: ['DIR', "write the MachineConfigs into the installer's manifests folder DIR"],
  'install-config': ['FILE', "the installer's install-config.yaml, checked for a relocatable cluster"],
  'internal-ip': ['CIDR', 'the address the installation gives br-ex'],
  image: ['REF', 'the container image holding the agent, installed on the node'],
  trust: ['DIR', 'the public keys site-configs must be signed with (installed on the node)'],
  'shelf-days': ['N', 'days the node may wait before it is unpacked: certificates must last (default 30)'],
  'power-off': ['', 'power the node off once sealed'],
};

type Parsed = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
export type Flags = Parsed['values'];

export interface Invocation {
  command: string | undefined;
  positionals: string[];
  flags: Flags;
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
