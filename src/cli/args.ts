/** Command-line parsing: one table of options, shared by every command. */
import { parseArgs } from 'node:util';
import { UsageError } from '../engine/errors.js';

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
  'health-timeout': { type: 'string', default: '600' },
  once: { type: 'boolean', default: false },
  key: { type: 'string' },
  out: { type: 'string' },
  'not-after': { type: 'string' },
  'bind-machine-id': { type: 'string' },
  'bind-serial': { type: 'string' },
  'metrics-address': { type: 'string', default: '127.0.0.1:9464' },
  'record-events': { type: 'string' },
  replay: { type: 'string' },
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

export function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag}: "${value}" is not one of ${allowed.join(', ')}`);
}

export function seconds(flag: string, value: string | undefined): number {
  const n = Number(value);
  if (value === undefined || !/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new UsageError(`${flag}: expected a whole number of seconds, got "${value}"`);
  return n;
}

export function atMostOnePath(command: string, positionals: string[]): string | undefined {
  if (positionals.length > 1) throw new UsageError(`${command} takes at most one PATH, got ${positionals.length}`);
  return positionals[0];
}

export const HELP = `sno-relocate: makes a single-node OpenShift cluster become the cluster of the site it is plugged into

Usage:
  sno-relocate validate [PATH]        check a site-config (file, or a folder holding site-config.yaml)
  sno-relocate plan     [PATH]        print what run would change, changing nothing (-o json|yaml|text)
  sno-relocate run      [PATH]        apply it: node steps, kubelet, cluster steps, health
  sno-relocate status                 progress and result of the last run, and watcher findings (-o json|text)
  sno-relocate watch                  companion watcher: OLM, Cluster API, on-cluster layering, operators
  sno-relocate watch --once           one sync, print the findings (-o json|text); exit 1 when one is an error
  sno-relocate keygen --out NAME      a signing key pair: NAME.key (private, 0600) and NAME.pub
  sno-relocate sign --key NAME.key [--not-after DATE] [--bind-machine-id ID | --bind-serial SERIAL] FOLDER
                                      write FOLDER/site-config.sig over the site-config and every file it names
  sno-relocate --version | --help

Steps, in order (for --only and --skip; groups: node, cluster):
  node:    ssh-keys, node-pull-secret, network, internal-ip, hostname, kubelet
  cluster: csr-approval, domain, routes, cluster-pull-secret, mirrors, health

Options:
  --root DIR            resolve every host path under DIR (default /)
  --state-dir DIR       state folder (default /var/lib/sno-relocate)
  --kubeconfig FILE     cluster access (default: the node's localhost kubeconfig, then $KUBECONFIG)
  --only LIST           run or plan only these steps or groups (comma separated)
  --skip LIST           leave out these steps or groups
  --wait SECONDS        with no PATH, wait this long for a site-config to appear (default 0)
  --health-timeout SEC  how long the health step waits for a healthy cluster (default 600)
  --console DEVICE      where the one-line progress banner goes (default /dev/console under systemd)
  -o, --output FORMAT   text, json or yaml (plan); text or json (status, watch --once)
  --log-level LEVEL     trace, debug, info, warn, error (default info)
  --log-format FORMAT   text or json (default text)

With no PATH, run looks for /etc/sno-relocate/site-config.yaml, then a filesystem labelled
cluster-config or relocation-config.

Exit codes: 0 done or nothing to do; 1 a step failed (the next run resumes); 2 usage error or invalid
site-config (nothing changed); 3 refused: untrusted site-config or conflicting host state.
`;
