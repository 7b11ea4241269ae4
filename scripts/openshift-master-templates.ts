/**
 * Writes test/e2e/mcd-model/openshift-master.json: every file and unit the machine-config
 * operator's templates declare for a master of a single-node cluster on platform None, per release
 * branch 4.14 to 4.18, read from a clone of openshift/machine-config-operator:
 *
 *   npx tsx scripts/openshift-master-templates.ts <machine-config-operator .git or clone>
 *
 * It picks the templates as the operator does (pkg/controller/template/render.go, release-4.18
 * :104-300, the same in 4.14-4.17): templates/common goes into 00-master; for each
 * templates/master/<name> the platform folders _base, then the platform's (none), then sno for a
 * SingleReplica control plane, a later folder's template replacing an earlier one of the same file
 * name; a template that renders to nothing declares nothing. Go's text/template is not run here:
 * the few conditions that decide whether a template declares anything, or a unit's enablement,
 * are evaluated for this cluster (CONDITIONS below; an unknown one stops the script), and other
 * actions stay as they are in the contents. So contents are given only where the template has no
 * action at all, which is the case for most drop-ins and scripts.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';

const BRANCHES = ['release-4.14', 'release-4.15', 'release-4.16', 'release-4.17', 'release-4.18'];
const PLATFORM_DIRS = ['_base', 'none', 'sno'];
const OUT = new URL('../test/e2e/mcd-model/openshift-master.json', import.meta.url).pathname;

/**
 * The render config of this cluster: platform None, SingleReplica, OVNKubernetes, IPv4, a Proxy
 * status with no proxy in it, no additional trust bundle, no MTU migration, no cloud provider.
 */
const CONDITIONS: Record<string, boolean> = {
  '.Proxy': true,
  '.Proxy.NoProxy': false,
  '.Proxy.HTTPSProxy': false,
  '.Proxy.HTTPProxy': false,
  '.AdditionalTrustBundle': false,
  '.Network': true,
  '.Network.MTUMigration': false,
  '.Network.MTUMigration.Machine': false,
  '.Network.MTUMigration.Machine.To': false,
  '.Network.MTUMigration.Machine.From': false,
  '.Network.MTUMigration.Network': false,
  '.Network.MTUMigration.Network.To': false,
  'eq .NetworkType "OVNKubernetes"': true,
  'eq .NetworkType "OpenShiftSDN"': false,
  'eq .NetworkType "OVNKubernetes" "OpenShiftSDN"': true,
  'eq .IPFamilies "IPv6"': false,
  'or (eq .IPFamilies "DualStack") (eq .IPFamilies "DualStackIPv6Primary")': false,
  'or (eq .IPFamilies "IPv6") (eq .IPFamilies "DualStackIPv6Primary")': false,
  'eq .Infra.Status.PlatformStatus.Type "None"': true,
  'or (eq .Infra.Status.PlatformStatus.Type "None") (eq .Infra.Status.PlatformStatus.Type "External") (and (eq .Infra.Status.ControlPlaneTopology "SingleReplica") (eq (cloudProvider .) "external"))': true,
  'or (eq .Infra.Status.PlatformStatus.Type "None") (and (eq .Infra.Status.ControlPlaneTopology "SingleReplica") (eq (cloudProvider .) "external"))': true,
};
/** pkg/constants: the values a template may put in a path */
const CONSTANTS: Record<string, string> = { '.Constants.APIServerURLFile': '/etc/kubernetes/apiserver-url.env' };

const git = (dir: string, ...args: string[]): string =>
  execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });

/** The template with its if/else blocks decided; other actions left in place (marked by `{{`). */
function decide(text: string, where: string): string {
  const out: string[] = [];
  // each frame: whether its branch is taken, and whether an earlier branch of it was
  const stack: { taking: boolean; taken: boolean; loop: boolean }[] = [];
  const live = () => stack.every((f) => f.taking);
  let at = 0;
  for (const m of text.matchAll(/\{\{-?\s*(.*?)\s*-?\}\}/gs)) {
    if (live()) out.push(text.slice(at, m.index));
    at = m.index + m[0].length;
    const action = m[1]!;
    const cond = /^(if|else if) (.*)$/.exec(action);
    if (cond) {
      const value = CONDITIONS[cond[2]!];
      if (value === undefined) throw new Error(`${where}: a condition this script does not know: ${cond[2]}`);
      if (cond[1] === 'if') stack.push({ taking: value, taken: value, loop: false });
      else {
        const f = stack.at(-1)!;
        f.taking = !f.taken && value;
        f.taken ||= value;
      }
    } else if (action === 'else') {
      const f = stack.at(-1)!;
      f.taking = !f.taken;
      f.taken = true;
    } else if (action === 'end') stack.pop();
    else if (/^range /.test(action)) stack.push({ taking: true, taken: true, loop: true });
    else if (live()) out.push(CONSTANTS[action] ?? m[0]);
  }
  if (live()) out.push(text.slice(at));
  return out.join('');
}

interface Template {
  path?: string;
  mode?: number;
  contents?: { inline?: string };
  name?: string;
  enabled?: boolean | string;
  mask?: boolean;
  dropins?: { name: string; contents?: string }[];
}

function releaseOf(dir: string, branch: string) {
  const all = git(dir, 'ls-tree', '-r', '--name-only', branch, 'templates/').split('\n');
  const exists = (folder: string) => all.some((p) => p.startsWith(`${folder}/`));
  const names = [...new Set(all.flatMap((p) => /^templates\/master\/([^/]+)\//.exec(p)?.[1] ?? []))].sort();
  const files = new Map<string, Record<string, unknown>>();
  const units = new Map<string, Record<string, unknown>>();
  names.forEach((name, i) => {
    const folders = [
      ...(i === 0 ? PLATFORM_DIRS.map((d) => `templates/common/${d}`) : []),
      ...PLATFORM_DIRS.map((d) => `templates/master/${name}/${d}`),
    ].filter(exists);
    for (const kind of ['files', 'units'] as const) {
      const chosen = new Map<string, string>();
      for (const folder of folders)
        for (const p of all.filter((q) => q.startsWith(`${folder}/${kind}/`))) chosen.set(path.basename(p), p);
      for (const [, template] of [...chosen].sort()) {
        const text = decide(git(dir, 'show', `${branch}:${template}`), `${branch}:${template}`);
        if (text.trim() === '') continue;
        // an action alone on its line is indented contents (`{{indent 4 ...}}`)
        const placeholders = text.replace(/^\{\{.*?\}\}/gm, '    TEMPLATED').replace(/\{\{.*?\}\}/gs, 'TEMPLATED');
        const t = yaml.load(placeholders) as Template;
        const source = { machineConfig: name, template };
        if (kind === 'files') {
          if (!t.path || t.path.includes('TEMPLATED')) throw new Error(`${branch}:${template}: no path`);
          const contents = text.includes('{{') ? undefined : t.contents?.inline;
          files.set(t.path, {
            path: t.path,
            // YAML 1.1, as the operator reads it: 0644 is octal
            mode: /^mode: 0[0-7]+$/m.test(text) ? parseInt(/^mode: (0[0-7]+)$/m.exec(text)![1]!, 8) : (t.mode ?? 0o644),
            ...source,
            ...(contents !== undefined && { contents }),
          });
          continue;
        }
        const u = units.get(t.name!) ?? { name: t.name, templates: [], dropins: [] };
        (u.templates as string[]).push(template);
        if (t.enabled !== undefined) u.enabled = t.enabled === true || t.enabled === 'true';
        if (t.mask !== undefined) u.mask = t.mask;
        if (t.contents !== undefined) u.contents = true;
        for (const d of t.dropins ?? []) (u.dropins as string[]).push(d.name);
        units.set(t.name!, u);
      }
    }
  });
  return {
    commit: git(dir, 'rev-parse', branch).trim(),
    files: [...files.values()].sort((a, b) => String(a.path).localeCompare(String(b.path))),
    units: [...units.values()].sort((a, b) => String(a.name).localeCompare(String(b.name))),
  };
}

const dir = process.argv[2];
if (!dir) throw new Error('usage: openshift-master-templates.ts <machine-config-operator clone or git dir>');
const releases = Object.fromEntries(BRANCHES.map((b) => [b, releaseOf(dir, b)]));
writeFileSync(
  OUT,
  `${JSON.stringify(
    {
      source: 'openshift/machine-config-operator templates/common and templates/master, platform none, SingleReplica',
      generatedBy: 'scripts/openshift-master-templates.ts',
      releases,
    },
    null,
    2,
  )}\n`,
);
console.log(
  `${OUT}: ${BRANCHES.map((b) => `${b} ${releases[b]!.files.length} files ${releases[b]!.units.length} units`).join(', ')}`,
);
