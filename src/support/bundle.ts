/**
 * The support bundle: one gzipped tar of what support asks a technician for, gathered on the node.
 * Every entry passes the redaction the logs pass (log/redact.ts) before it is written: JSON by
 * field name and value, text by value. Bounded: each command has a time limit and each entry a
 * size limit (the newest part kept), the whole gathering a deadline; what was cut or could not be
 * read is said in MANIFEST.txt, never silently left out. The state folder's keys (the site CA's)
 * are listed by name and size only, never read.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create as createTar } from 'tar';
import { errorMessage } from '../base/errors.js';
import { AGENT_VERSION } from '../base/version.js';
import { redactSecrets, scrubText } from '../log/redact.js';
import type { Exec } from '../ports/exec.js';
import type { RootFs } from '../ports/fs.js';

export const BUNDLE_DIR = 'sno-relocate-support';

export interface BundleLimits {
  /** bytes kept of one entry: the end of a longer one */
  entryBytes: number;
  /** a command's time limit */
  commandMs: number;
  /** no command starts after this much time */
  totalMs: number;
}

export const DEFAULT_LIMITS: BundleLimits = { entryBytes: 8 * 1024 * 1024, commandMs: 30_000, totalMs: 120_000 };

/** the agent's own units, the kubelet gate's and the binary installer's */
const AGENT_UNITS = [
  'sno-relocate.service',
  'sno-relocate-watch.service',
  'sno-relocate-gate.service',
  'sno-relocate-install.service',
  'sno-relocate-install.path',
];
const JOURNAL_LINES = '20000';

/**
 * The journal's parts, each selected by the unit or identifier its program really writes under.
 * kubelet.service runs kubelet through kubenswrapper (openshift/machine-config-operator
 * templates/master/01-master-kubelet/_base/units/kubelet.service.yaml), so its unit selects it; CRI-O
 * and NetworkManager run as crio.service and NetworkManager.service (cri-o/cri-o
 * contrib/systemd/crio.service, NetworkManager data/NetworkManager.service.in). The machine-config
 * daemon runs in a pod: its own journal lines are written by `logger` with no tag, as
 * "machine-config-daemon[PID]: ...", so journald files them under the user's name, root
 * (openshift/machine-config-operator pkg/daemon, logSystem); its first-boot and pull steps are units.
 */
const JOURNALS: readonly (readonly [entry: string, matches: readonly string[]])[] = [
  ['journal/sno-relocate.txt', AGENT_UNITS.flatMap((u) => ['-u', u])],
  ['journal/kubelet.txt', ['-u', 'kubelet.service']],
  ['journal/crio.txt', ['-u', 'crio.service']],
  ['journal/NetworkManager.txt', ['-u', 'NetworkManager.service']],
  [
    'journal/machine-config-daemon.txt',
    [
      'SYSLOG_IDENTIFIER=root',
      '+',
      '_SYSTEMD_UNIT=machine-config-daemon-firstboot.service',
      '+',
      '_SYSTEMD_UNIT=machine-config-daemon-pull.service',
    ],
  ],
];

/** journalctl for one part: of the node's own journal, or of the journal files under --root */
const journal = (root: string, matches: readonly string[]): string[] => [
  '--no-pager',
  '-o',
  'short-iso-precise',
  '-n',
  JOURNAL_LINES,
  ...(root === '/' ? [] : ['--root', root]),
  ...matches,
];

/** name in the bundle, and the command whose output it is */
const commands = (root: string): readonly (readonly [entry: string, command: string, args: readonly string[]])[] => [
  ...JOURNALS.map(([entry, matches]) => [entry, 'journalctl', journal(root, matches)] as const),
  ['network/nmstate.yaml', 'nmstatectl', ['show']],
  ['network/ip-address.json', 'ip', ['-j', 'address']],
  ['network/ip-route.json', 'ip', ['-j', 'route', 'show', 'table', 'all']],
  ['network/nmcli-connections.txt', 'nmcli', ['-t', '-f', 'NAME,UUID,TYPE,DEVICE,ACTIVE', 'connection', 'show']],
  ['versions/installed.txt', '/usr/local/bin/sno-relocate', ['--version']],
  ['versions/previous.txt', '/usr/local/lib/sno-relocate/sno-relocate.previous', ['--version']],
  ['versions/os-release.txt', 'cat', ['/etc/os-release']],
  ['versions/uname.txt', 'uname', ['-a']],
];

/** the files of the state folder that are read into the bundle (the others are listed only) */
const STATE_FILES = ['state.json', 'sli.json', 'watch.json', 'shipment.json'];
/** host files copied in as text */
const HOST_FILES: readonly (readonly [entry: string, file: string])[] = [
  ['install/install.env', '/etc/sno-relocate/install.env'],
  ['install/installed-image', '/usr/local/lib/sno-relocate/installed-image'],
  ['install/previous-image', '/usr/local/lib/sno-relocate/previous-image'],
  ['network/resolv.conf', '/etc/resolv.conf'],
];

export interface BundleInput {
  fs: RootFs;
  exec: Exec;
  stateDir: string;
  /** `sno-relocate status` as text and as JSON */
  status: () => Promise<{ text: string; json: string }>;
  limits?: BundleLimits;
  now: () => number;
}

export interface BundleResult {
  entries: string[];
  notes: string[];
  bytes: number;
}

/** JSON redacted by field name and value; anything else by value */
export function redactEntry(name: string, text: string): string {
  if (name.endsWith('.json')) {
    try {
      return `${JSON.stringify(redactSecrets(JSON.parse(text) as unknown), null, 2)}\n`;
    } catch {
      // not JSON after all (a cut entry): redacted as text
    }
  }
  return scrubText(text);
}

/** Gathers the bundle and writes it to `out` (gzipped tar, mode 0600). */
export async function writeSupportBundle(input: BundleInput, out: string): Promise<BundleResult> {
  const limits = input.limits ?? DEFAULT_LIMITS;
  const started = input.now();
  const entries = new Map<string, string>();
  const notes: string[] = [];
  const add = (name: string, text: string) => {
    const bytes = Buffer.from(text, 'utf8');
    const kept =
      bytes.length > limits.entryBytes
        ? (notes.push(`${name}: cut to its last ${limits.entryBytes} bytes of ${bytes.length}`),
          bytes.subarray(bytes.length - limits.entryBytes).toString('utf8'))
        : text;
    entries.set(name, redactEntry(name, kept));
  };

  add('versions/sno-relocate.txt', `sno-relocate ${AGENT_VERSION} (node ${process.version})\n`);
  try {
    const status = await input.status();
    add('status.txt', status.text);
    add('status.json', status.json);
  } catch (err) {
    notes.push(`status: ${errorMessage(err)}`);
  }
  for (const file of STATE_FILES) {
    const text = await input.fs.readText(path.posix.join(input.stateDir, file)).catch(() => undefined);
    if (text !== undefined) add(`state/${file}`, text);
  }
  add('state/listing.txt', await listing(input.fs, input.stateDir));
  for (const [name, file] of HOST_FILES) {
    const text = await input.fs.readText(file).catch(() => undefined);
    if (text === undefined) notes.push(`${name}: ${file} is not there`);
    else add(name, text);
  }
  for (const [name, command, args] of commands(input.fs.root)) {
    const left = limits.totalMs - (input.now() - started);
    if (left <= 0) {
      notes.push(`${name}: not gathered, the bundle's time (${limits.totalMs / 1000} s) ran out`);
      continue;
    }
    try {
      const r = await input.exec.run(command, args, {
        allowFailure: true,
        timeoutMs: Math.min(limits.commandMs, left),
      });
      if (r.code !== 0) notes.push(`${name}: ${command} exited ${r.code ?? 'on a signal (time limit)'}`);
      add(name, r.stdout + (r.stderr ? `\n--- stderr ---\n${r.stderr}` : ''));
    } catch (err) {
      notes.push(`${name}: ${errorMessage(err)}`);
    }
  }
  add(
    'MANIFEST.txt',
    [
      `sno-relocate support bundle, sno-relocate ${AGENT_VERSION}, gathered in ${Math.round(input.now() - started)} ms`,
      'Every entry passed the redaction the logs pass.',
      '',
      ...[...entries.keys()].sort(),
      '',
      notes.length ? 'Not gathered, or cut:' : 'Everything was gathered.',
      ...notes,
      '',
    ].join('\n'),
  );

  const work = await mkdtemp(path.join(tmpdir(), 'sno-relocate-support-'));
  try {
    for (const [name, text] of entries) {
      const file = path.join(work, BUNDLE_DIR, name);
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      await writeFile(file, text, { mode: 0o600 });
    }
    await createTar({ gzip: true, file: out, cwd: work, portable: true, mode: 0o600 }, [BUNDLE_DIR]);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return {
    entries: [...entries.keys()],
    notes,
    bytes: [...entries.values()].reduce((n, t) => n + Buffer.byteLength(t), 0),
  };
}

/** the state folder's files by name, size and mode: the site CA's key is there, so nothing is read */
async function listing(fs: RootFs, dir: string): Promise<string> {
  const lines: string[] = [];
  const walk = async (rel: string, depth: number): Promise<void> => {
    for (const name of [...(await fs.list(path.posix.join(dir, rel)))].sort()) {
      const p = path.posix.join(rel, name);
      const full = path.posix.join(dir, p);
      const inner = depth < 3 ? await fs.list(full).catch(() => undefined) : undefined;
      if (inner !== undefined) {
        lines.push(`${p}/`);
        await walk(p, depth + 1);
      } else {
        const [size, mode] = await Promise.all([fs.size(full), fs.mode(full)]);
        lines.push(`${p}  ${size ?? '?'} bytes  mode ${mode === undefined ? '?' : (mode & 0o7777).toString(8)}`);
      }
    }
  };
  await walk('', 0).catch((err: unknown) => lines.push(`cannot be listed: ${errorMessage(err)}`));
  return `${lines.join('\n')}\n`;
}
