/**
 * What each command takes: its usage and its options, declared apart from its code so that parsing
 * the command line and printing help load none of it (the Kubernetes client, the steps). An option
 * a command does not declare is a usage error naming the command (args.ts), and its handler receives
 * only the options declared here, typed (`OptionsOf`): naming another is a compile error.
 */
import type { OptionName } from '../option-table.js';

export interface CommandSpec {
  /** the words that name it: `validate`, or `factory prepare` for a subcommand */
  name: string;
  /** each form of the command: its synopsis (after `sno-relocate`) and what it does */
  usage: readonly (readonly [synopsis: string, does: string])[];
  options: readonly OptionName[];
  /** its help lists the steps, for --only and --skip */
  listsSteps?: true;
}

const LOG = ['log-level', 'log-format'] as const;
/** what run takes, and plan with it, since plan says what that same run would change */
const APPLY = [
  'root',
  'state-dir',
  'kubeconfig',
  'wait',
  'console',
  'only',
  'skip',
  'health-timeout',
  'health-stable',
] as const;

const DECLARED = [
  {
    name: 'validate',
    usage: [
      [
        'validate [PATH]',
        'check a site-config (file, or a folder holding site-config.yaml, or config media holding cluster-configuration/manifest.json)',
      ],
      ['validate --translate [PATH]', 'print the native site-config it becomes (-o yaml|json)'],
    ],
    options: ['root', 'wait', 'console', 'output', 'translate', ...LOG],
  },
  {
    name: 'plan',
    usage: [['plan [PATH]', 'print what run would change, changing nothing (-o json|yaml|text)']],
    options: [...APPLY, 'output', ...LOG],
    listsSteps: true,
  },
  {
    name: 'run',
    usage: [['run [PATH]', 'apply it: node steps, kubelet, cluster steps, health']],
    options: [...APPLY, ...LOG],
    listsSteps: true,
  },
  {
    name: 'status',
    usage: [['status', 'progress and result of the last run, and watcher findings (-o json|text)']],
    options: ['root', 'state-dir', 'output', ...LOG],
  },
  {
    name: 'support-bundle',
    usage: [
      [
        'support-bundle --out FILE.tar.gz',
        "what support needs, secrets redacted: status, state, the last plan, the journals, the node's network, versions",
      ],
    ],
    options: ['root', 'state-dir', 'out', ...LOG],
  },
  {
    name: 'watch',
    usage: [
      ['watch [PATH]', 'companion watcher: OLM, Cluster API, on-cluster layering, operators'],
      ['watch --once [PATH]', 'one sync, print the findings (-o json|text); exit 1 when one is an error'],
      ['watch --replay FILE', 'the findings of a recording made with --record-events, without a cluster'],
    ],
    options: [
      'root',
      'state-dir',
      'kubeconfig',
      'console',
      'output',
      'once',
      'replay',
      'record-events',
      'metrics-address',
      ...LOG,
    ],
  },
  {
    name: 'gate',
    usage: [['gate [PATH]', 'before kubelet at boot: close the kubelet gate while a new site-config waits']],
    options: ['root', 'state-dir', 'wait', 'console', ...LOG],
  },
  {
    name: 'keygen',
    usage: [['keygen --out NAME', 'a signing key pair: NAME.key (private, 0600) and NAME.pub']],
    options: ['out'],
  },
  {
    name: 'sign',
    usage: [
      [
        'sign --key NAME.key [--not-after DATE] [--bind-machine-id ID | --bind-serial SERIAL]\n                    [--generation N] [--node-key RECIPIENT] FOLDER',
        "write FOLDER/site-config.sig over the site-config and every file it names, its secrets first sealed to the node's key",
      ],
    ],
    options: ['key', 'not-after', 'bind-machine-id', 'bind-serial', 'generation', 'node-key'],
  },
  {
    name: 'render',
    usage: [
      [
        'render --inventory FILE --template DIR --out DIR [--key NAME.key [--not-after DATE]] [--iso]\n                    [--hub-objects DIR [--placement NAMESPACE/NAME]]',
        'one signed site folder (and ISO image) per inventory row, each validated',
      ],
    ],
    options: ['inventory', 'template', 'out', 'key', 'not-after', 'iso', 'hub-objects', 'placement', 'output', ...LOG],
  },
  {
    name: 'credentials',
    usage: [
      [
        'credentials --site DIR --key CLIENT-CA.key --out FILE [--user NAME]',
        "the site's admin kubeconfig, signed by its client CA (-o json|text)",
      ],
    ],
    options: ['site', 'key', 'out', 'user', 'output'],
  },
  {
    name: 'fleet status',
    usage: [
      [
        'fleet status --kubeconfigs DIR [--concurrency N] [--timeout SECONDS]',
        "each cluster's SiteRelocation, read concurrently (-o json|text)",
      ],
    ],
    options: ['kubeconfigs', 'concurrency', 'timeout', 'output'],
  },
  {
    name: 'factory prepare',
    usage: [
      [
        'factory prepare [--image REF] [--trust DIR] [--require-tpm]',
        "on the installed node: br-ex's install address becomes the internal IP; preconditions checked, MachineConfigs applied (each reboot shown)",
      ],
      [
        'factory prepare --manifests DIR --install-config FILE --internal-ip CIDR',
        "before installation: the MachineConfigs for the installer's manifests, the install subnet recorded in them for the node's first boot",
      ],
    ],
    options: [
      'root',
      'state-dir',
      'kubeconfig',
      'image',
      'trust',
      'require-tpm',
      'manifests',
      'install-config',
      'internal-ip',
      'output',
      ...LOG,
    ],
  },
  {
    name: 'factory check',
    usage: [
      [
        'factory check [--shelf-days N] [--require-tpm]',
        'fit to ship? cluster, agent, gate, trust, node key, certificates on arrival (-o json|text)',
      ],
    ],
    options: ['root', 'state-dir', 'kubeconfig', 'shelf-days', 'require-tpm', 'output', ...LOG],
  },
  {
    name: 'factory seal',
    usage: [
      [
        'factory seal [--shelf-days N] [--power-off]',
        'check, then the shipping state: state cleared, gate closed, shipment recorded',
      ],
    ],
    options: ['root', 'state-dir', 'kubeconfig', 'shelf-days', 'power-off', 'output', ...LOG],
  },
] as const satisfies readonly CommandSpec[];

export const COMMAND_SPECS: readonly CommandSpec[] = DECLARED;

/** the words of every command: `validate`, `factory seal` */
export type CommandName = (typeof DECLARED)[number]['name'];

/** the options the commands `C` take (for a group, any of its subcommands) */
export type OptionsOf<C extends CommandName> = Extract<(typeof DECLARED)[number], { name: C }>['options'][number];

/** `factory` and `fleet`: commands that are a word before their subcommands */
export const COMMAND_GROUPS: readonly string[] = [
  ...new Set(COMMAND_SPECS.filter((s) => s.name.includes(' ')).map((s) => s.name.split(' ')[0]!)),
];

/** The command the positionals name; for a group whose subcommand is missing or unknown, the group itself. */
export function commandSpec(positionals: readonly string[]): CommandSpec | undefined {
  const [first, second] = positionals;
  if (first === undefined) return undefined;
  if (!COMMAND_GROUPS.includes(first)) return COMMAND_SPECS.find((s) => s.name === first);
  const sub = COMMAND_SPECS.find((s) => s.name === `${first} ${second}`);
  if (sub) return sub;
  const members = COMMAND_SPECS.filter((s) => s.name.startsWith(`${first} `));
  // the group's own code says which subcommands there are; its options are those of any of them
  return {
    name: first,
    usage: members.flatMap((s) => s.usage),
    options: [...new Set(members.flatMap((s) => s.options))],
  };
}
