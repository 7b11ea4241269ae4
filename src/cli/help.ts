/**
 * The help texts, from the commands' declarations (commands/options.ts) and the options' table
 * (option-table.ts). Only the help of a command that takes --only and --skip lists the steps, which its
 * caller passes in: `--help` loads no step.
 */
import { OPTIONS, type OptionName } from './option-table.js';
import { COMMAND_SPECS, type CommandSpec } from './commands/options.js';

const WIDTH = 118;
const USAGE_COLUMN = 38;
const OPTION_COLUMN = 24;

/** `text` wrapped at WIDTH, every line after the first indented to `indent` */
function wrap(text: string, indent: number, first: number): string {
  const lines: string[] = [];
  let line = '';
  let room = WIDTH - first;
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > room) {
      lines.push(line);
      line = word;
      room = WIDTH - indent;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
}

/** `  sno-relocate SYNOPSIS   what it does`, the description on a line of its own after a long synopsis */
function usageLine([synopsis, does]: readonly [string, string]): string {
  const head = `  sno-relocate ${synopsis}`;
  const last = head.split('\n').at(-1)!;
  if (last.length < USAGE_COLUMN - 1)
    return `${head.slice(0, head.length - last.length)}${last.padEnd(USAGE_COLUMN)}${wrap(does, USAGE_COLUMN, USAGE_COLUMN)}`;
  return `${head}\n${' '.repeat(USAGE_COLUMN)}${wrap(does, USAGE_COLUMN, USAGE_COLUMN)}`;
}

function optionLine(name: OptionName | 'help'): string {
  const { value, help: does } = OPTIONS[name];
  const short = (OPTIONS[name] as { short?: string }).short;
  const flag = `  ${short ? `-${short}, ` : ''}--${name}${value ? ` ${value}` : ''}`;
  return flag.length < OPTION_COLUMN - 1
    ? `${flag.padEnd(OPTION_COLUMN)}${wrap(does, OPTION_COLUMN, OPTION_COLUMN)}`
    : `${flag}\n${' '.repeat(OPTION_COLUMN)}${wrap(does, OPTION_COLUMN, OPTION_COLUMN)}`;
}

/** where the commands that take --wait look for a site-config when they are given no PATH */
const discovery = (who: string) =>
  wrap(
    `With no PATH, ${who} /etc/sno-relocate/site-config.yaml, then a filesystem labelled cluster-config or relocation-config holding a site-config.yaml or an image-based install's cluster-configuration/manifest.json.`,
    0,
    0,
  );

const EXIT_CODES = `Exit codes: 0 done or nothing to do; 1 a step failed (the next run resumes); 2 usage error or invalid
site-config (nothing changed); 3 refused: untrusted site-config or conflicting host state.`;

/** the options most commands take, for the overview */
const COMMON: readonly OptionName[] = ['root', 'state-dir', 'kubeconfig', 'output', 'log-level', 'log-format'];

export const HELP = `sno-relocate: makes a single-node OpenShift cluster become the cluster of the site it is plugged into

Usage:
${COMMAND_SPECS.flatMap((s) => s.usage.map(usageLine)).join('\n')}
${usageLine(['COMMAND --help', 'the options COMMAND takes (and, for run and plan, the steps)'])}
  sno-relocate --version | --help

Options most commands take (each command takes only those its --help lists):
${COMMON.map(optionLine).join('\n')}

${discovery(
  `${COMMAND_SPECS.filter((s) => s.options.includes('wait'))
    .map((s) => s.name)
    .join(', ')
    .replace(/, (?=[^,]*$)/, ' and ')} look for`,
)}

${EXIT_CODES}
`;

/** One command's help; `steps` (in order) for a command that takes --only and --skip. */
export function commandHelp(spec: CommandSpec, steps?: readonly { name: string; group: string }[]): string {
  const groups = [...new Set(steps?.map((s) => s.group))];
  const stepList = steps
    ? `\nSteps, in order (for --only and --skip; groups: ${groups.join(', ')}):\n${groups
        .map(
          (g) =>
            `  ${`${g}:`.padEnd(9)}${wrap(
              steps
                .filter((s) => s.group === g)
                .map((s) => s.name)
                .join(', '),
              11,
              11,
            )}`,
        )
        .join('\n')}\n`
    : '';
  return `Usage:
${spec.usage.map(usageLine).join('\n')}

Options:
${[...spec.options, 'help' as const].map(optionLine).join('\n')}
${stepList}${spec.options.includes('wait') ? `\n${discovery(`${spec.name} looks for`)}\n` : ''}
${EXIT_CODES}
`;
}
