/**
 * The agent's command line from source, as a user runs it: a separate process with its exit code,
 * stdout and stderr, against a temporary root and the test stand-ins (nmstatectl stub, private D-Bus).
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { outputOf } from '../helpers/cli.js';
import { noteCliOutput } from '../helpers/error-log.js';
import { REPO } from './context.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runAgent(
  args: readonly string[],
  env: Record<string, string>,
  options: { prefix?: string[] } = {},
): CliResult {
  const argv = [
    ...(options.prefix ?? []),
    process.execPath,
    '--import',
    'tsx',
    path.join(REPO, 'src/cli/main.ts'),
    ...args,
  ];
  const result = spawnSync(argv[0]!, argv.slice(1), {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '', ...env },
    timeout: 120_000,
  });
  if (result.error) throw result.error;
  noteCliOutput(result.stderr, result.status);
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The agent's process, started and left running. */
export function startAgent(args: readonly string[], env: Record<string, string>): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/cli/main.ts'), ...args], {
    cwd: REPO,
    env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '', ...env },
    timeout: 300_000,
  });
}

/**
 * runAgent without blocking the test process: for tests whose models (test/cluster/models) must keep
 * reconciling in this process while the agent runs.
 */
export function runAgentAsync(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return outputOf(startAgent(args, env));
}

/** Writes a site-config folder: site-config.yaml with the given spec, and any files beside it. */
export function writeSiteFolder(
  dir: string,
  name: string,
  spec: Record<string, unknown>,
  files: Record<string, string> = {},
): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'site-config.yaml'),
    yaml.dump({ apiVersion: 'sno-relocate/v1', kind: 'SiteConfig', metadata: { name }, spec }),
  );
  for (const [file, content] of Object.entries(files)) writeFileSync(path.join(dir, file), content);
  return dir;
}

export const STORE_KEY =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN2MDNYgUAS0GPwsfH1wH03JkbZ7nJRPsI4u93oUxWLa support@store42';

/**
 * A store's spec whose gateway is this machine's loopback address, so the network checks really
 * ping and resolve, with the given registry auth.
 */
export function loopbackStoreSpec(auth: string, timeoutSeconds: number): Record<string, unknown> {
  return {
    baseDomain: 'store42.example.com',
    hostname: 'sno-store42',
    network: {
      nmstate: {
        interfaces: [
          {
            name: 'br-ex',
            type: 'ovs-interface',
            state: 'up',
            ipv4: { enabled: true, dhcp: false, address: [{ ip: '10.42.0.20', 'prefix-length': 24 }] },
            ipv6: { enabled: false },
          },
        ],
        routes: {
          config: [{ destination: '0.0.0.0/0', 'next-hop-address': '127.0.0.1', 'next-hop-interface': 'br-ex' }],
        },
        'dns-resolver': { config: { server: ['10.42.0.53'] } },
      },
      internalIP: '192.168.127.10/24',
      verify: { pingGateway: true, resolve: ['localhost'], timeoutSeconds },
    },
    pullSecret: { auths: { 'registry.store42.example.com:5000': { auth } } },
    sshAuthorizedKeys: [STORE_KEY],
  };
}
