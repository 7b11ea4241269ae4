/**
 * Writes test/e2e/mcd-model/openshift-master.json: every file and unit the machine-config
 * operator's templates declare for a master of a single-node cluster on platform None, per release
 * branch 4.14 to 4.18, read from a clone of openshift/machine-config-operator:
 *
 *   npx tsx scripts/openshift-master-templates.ts <machine-config-operator clone> <openshift/api clone>
 *
 * It picks the templates as the operator does (pkg/controller/template/render.go, release-4.18
 * :104-300, the same in 4.14-4.17): templates/common goes into 00-master; for each
 * templates/master/<name> the platform folders _base, then the platform's (none), then sno for a
 * SingleReplica control plane, a later folder's template replacing an earlier one of the same file
 * name; a template that renders to nothing declares nothing. Each template is then executed as
 * renderTemplate (render.go:330-362) executes it with Go's text/template, for this cluster's render
 * config (CONDITIONS, VALUES, LISTS below), and read as YAML: so the fixture has every file's path,
 * mode and contents, every unit's contents, enablement and drop-ins, as the rendered master config
 * carries them. No npm library runs Go templates with their trim markers, `eq` and function calls
 * under a licence this project can use, so `render` executes exactly the constructs these templates
 * use (if / else if / else, range, values, trim markers) and stops on any other: a new condition or
 * value in a later release is added here by hand, read from render.go. The cluster's secrets are
 * the scenario's (SCENARIO_VALUES): such a file is marked `scenario` instead of having contents.
 *
 * Then the MachineConfigs the operator's controllers generate for this cluster
 * (mco-generated-configs.ts): 97- and 98-master-generated-kubelet's /etc/kubernetes/kubelet.conf,
 * the template's with the Default feature set's gates re-encoded as the controller does, and
 * 99-master-generated-registries, which declares nothing here. A generated file is an entry like a
 * template's, its `machineConfig` the generated MachineConfig's name, so a path may appear once per
 * MachineConfig; `generated` lists the generated MachineConfigs with their kernel arguments.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { cgroupKernelArguments, generatedKubeletConf } from './mco-generated-configs.js';

const BRANCHES = ['release-4.14', 'release-4.15', 'release-4.16', 'release-4.17', 'release-4.18'];
const PLATFORM_DIRS = ['_base', 'none', 'sno'];
const KUBELET_CONF = '/etc/kubernetes/kubelet.conf';
const OUT = new URL('../test/e2e/mcd-model/openshift-master.json', import.meta.url).pathname;

/**
 * The render config of this cluster (pkg/controller/template/render.go RenderConfig): platform None,
 * SingleReplica, OVNKubernetes, IPv4, a Proxy status with no proxy in it, no additional trust
 * bundle, no MTU migration, no cloud provider, the default (Intermediate) TLS profile. The names
 * are the VM scenario's factory cluster (test/e2e/sno-dnsmasq.ts FACTORY_DOMAIN).
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

/** a release payload's image, as the ControllerConfig's images map names it (an example digest) */
const image = (name: string): string =>
  `quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:${createHash('sha256').update(name).digest('hex')}`;
const API_SERVER_INTERNAL_URL = 'https://api-int.sno.factory.example.com:6443';
/**
 * The Intermediate TLS profile (openshift/api config/v1 types_tlssecurityprofile.go TLSProfiles)
 * as helpers.go GetSecurityProfileCiphers gives it to the templates: min VersionTLS12, the ciphers
 * through library-go crypto.OpenSSLToIANACipherSuites, which drops the two DHE ones it has no name for.
 */
const TLS_CIPHER_SUITES = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
];

/**
 * The value actions, as render.go's functions give them for this cluster: urlHost/urlPort
 * (:591-612) of the internal API URL, cloudProvider (:376-392) and credentialProviderConfigFlag
 * (:397-425) empty on platform None, indent of an empty cloud config, strings.Join, the constants
 * (pkg/constants ConstantsByName). The cluster's secrets and CAs (.PullSecret, .RootCAData,
 * .InternalRegistryPullSecret) are not here: a file that needs one gets no contents, and the
 * scenario supplies them.
 */
const VALUES: Record<string, string> = {
  '.Constants.APIServerURLFile': '/etc/kubernetes/apiserver-url.env',
  'urlHost .Infra.Status.APIServerInternalURL': new URL(API_SERVER_INTERNAL_URL).hostname,
  'urlPort .Infra.Status.APIServerInternalURL': new URL(API_SERVER_INTERNAL_URL).port,
  '.NetworkType': 'OVNKubernetes',
  '.ClusterDNSIP': '172.30.0.10',
  '.TLSMinVersion': 'VersionTLS12',
  'join .TLSCipherSuites ","': TLS_CIPHER_SUITES.join(','),
  'cloudProvider .': '',
  'credentialProviderConfigFlag .': '',
  // 4.14-4.15 render.go:400-430: empty without a cloud config
  'cloudConfigFlag .': '',
  'indent 4 .CloudProviderConfig': '',
  '.Images.infraImageKey': image('pod'),
  '.Images.kubeRbacProxyImage': image('kube-rbac-proxy'),
  '.Images.machineConfigOperator': image('machine-config-operator'),
  '.Images.baremetalRuntimeCfgImage': image('baremetal-runtime-cfg'),
};
const LISTS: Record<string, string[]> = { '.TLSCipherSuites': TLS_CIPHER_SUITES };

const git = (dir: string, ...args: string[]): string =>
  execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });

type Token = { text: string } | { action: string };

/**
 * text/template's lexer for what these templates use: actions `{{ }}`, with Go's trim markers
 * (`{{- ` drops the white space before the action, ` -}}` the white space after it).
 */
function tokens(text: string): Token[] {
  const out: Token[] = [];
  let at = 0;
  let trimNext = false;
  for (const m of text.matchAll(/\{\{(-[ \t\r\n])?\s*(.*?)\s*?([ \t\r\n]-)?\}\}/gs)) {
    let before = text.slice(at, m.index);
    if (trimNext) before = before.replace(/^\s+/, '');
    if (m[1]) before = before.replace(/\s+$/, '');
    out.push({ text: before }, { action: m[2]!.trim() });
    trimNext = m[3] !== undefined;
    at = m.index + m[0].length;
  }
  out.push({ text: trimNext ? text.slice(at).replace(/^\s+/, '') : text.slice(at) });
  return out;
}

/**
 * Executes a template for this cluster: if / else if / else on CONDITIONS, range over LISTS with
 * `.` the element, values from VALUES. `keep` lists the value actions left in place (the
 * scenario's); any other action stops the script.
 */
function render(text: string, where: string, keep: (action: string) => boolean): string {
  const toks = tokens(text);
  let i = 0;
  const block = (dot: string | undefined, live: boolean): { out: string; end: string } => {
    let out = '';
    while (i < toks.length) {
      const t = toks[i++]!;
      if ('text' in t) {
        out += t.text;
        continue;
      }
      const a = t.action;
      if (a === 'end' || a === 'else' || a.startsWith('else if ')) return { out, end: a };
      const cond = /^if (.*)$/.exec(a);
      const range = /^range (.*)$/.exec(a);
      if (cond) {
        let taken = false;
        let c = cond[1]!;
        for (;;) {
          const value = c === '' || !live || taken ? true : CONDITIONS[c];
          if (value === undefined) throw new Error(`${where}: a condition this script does not know: ${c}`);
          const b = block(dot, live && !taken && value);
          if (live && !taken && value) {
            out += b.out;
            taken = true;
          }
          if (b.end === 'end') break;
          c = b.end === 'else' ? '' : b.end.slice('else if '.length);
        }
      } else if (range) {
        const list = live ? LISTS[range[1]!] : [];
        if (!list) throw new Error(`${where}: a range this script does not know: ${range[1]}`);
        const start = i;
        for (const item of list) {
          i = start;
          out += block(item, live).out;
        }
        if (list.length === 0) block(undefined, false);
      } else if (!live) continue;
      else if (a === '.' && dot !== undefined) out += dot;
      else if (VALUES[a] !== undefined) out += VALUES[a];
      else if (keep(a)) out += `{{${a}}}`;
      else throw new Error(`${where}: an action this script does not know: ${a}`);
    }
    return { out, end: '' };
  };
  return block(undefined, true).out;
}
/** the cluster's own values, supplied by the scenario */
const SCENARIO_VALUES = ['.PullSecret', '.InternalRegistryPullSecret'];
const scenarioValue = (a: string): boolean => SCENARIO_VALUES.includes(a) || /^\.RootCAData\b/.test(a);

interface Template {
  path?: string;
  mode?: number;
  contents?: { inline?: string } & string;
  name?: string;
  enabled?: boolean | string;
  mask?: boolean;
  dropins?: { name: string; contents?: string }[];
}

function releaseOf(dir: string, api: string, branch: string) {
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
        const where = `${branch}:${template}`;
        const source = git(dir, 'show', where);
        // a file that needs a value of the scenario's has no contents here (see SCENARIO_VALUES)
        const needsScenario = render(source, where, scenarioValue).includes('{{');
        const text = render(source, where, () => true);
        if (text.trim() === '') continue;
        // an action alone on its line is indented contents (`{{.RootCAData | toString | indent 4}}`)
        const parsed = needsScenario
          ? text.replace(/^\{\{.*?\}\}/gm, '    SCENARIO').replace(/\{\{.*?\}\}/g, 'SCENARIO')
          : text;
        const t = yaml.load(parsed) as Template;
        if (kind === 'files') {
          if (!t.path) throw new Error(`${where}: no path`);
          files.set(t.path, {
            path: t.path,
            // YAML 1.1, as the operator reads it: 0644 is octal
            mode: /^mode: 0[0-7]+$/m.test(text) ? parseInt(/^mode: (0[0-7]+)$/m.exec(text)![1]!, 8) : (t.mode ?? 0o644),
            machineConfig: name,
            template,
            ...(needsScenario ? { scenario: true } : { contents: t.contents?.inline ?? '' }),
          });
          continue;
        }
        if (needsScenario) throw new Error(`${where}: a unit needing the scenario's values`);
        // TranspileCoreOSConfigToIgn (helpers.go:912-960): the templates of one MachineConfig that
        // name the same unit make one unit, its drop-ins together
        const key = `${name}/${t.name!}`;
        const u = units.get(key) ?? { machineConfig: name, name: t.name, templates: [], dropins: [] };
        (u.templates as string[]).push(template);
        if (t.enabled !== undefined) u.enabled = t.enabled === true || t.enabled === 'true';
        if (t.mask !== undefined) u.mask = t.mask;
        if (t.contents !== undefined) u.contents = t.contents;
        for (const d of t.dropins ?? []) (u.dropins as unknown[]).push({ name: d.name, contents: d.contents ?? '' });
        units.set(key, u);
      }
    }
  });
  const kubeletConf = files.get(KUBELET_CONF);
  if (typeof kubeletConf?.contents !== 'string') throw new Error(`${branch}: no ${KUBELET_CONF} template`);
  const kubelet = generatedKubeletConf(dir, api, branch, kubeletConf.contents);
  const generated = [
    { name: '97-master-generated-kubelet', kernelArguments: cgroupKernelArguments(dir, branch) },
    { name: '98-master-generated-kubelet', featureGates: kubelet.featureGates },
    { name: '99-master-generated-registries' },
  ];
  const generatedFiles = generated
    .filter((g) => g.name.endsWith('-generated-kubelet'))
    .map((g) => ({ path: KUBELET_CONF, mode: 0o644, machineConfig: g.name, contents: kubelet.contents }));
  return {
    commit: git(dir, 'rev-parse', branch).trim(),
    generated,
    files: [...files.values(), ...generatedFiles].sort(
      (a, b) =>
        String(a.path).localeCompare(String(b.path)) || String(a.machineConfig).localeCompare(String(b.machineConfig)),
    ),
    units: [...units.values()].sort((a, b) =>
      `${String(a.name)}/${String(a.machineConfig)}`.localeCompare(`${String(b.name)}/${String(b.machineConfig)}`),
    ),
  };
}

const [dir, api] = process.argv.slice(2);
if (!dir || !api)
  throw new Error('usage: openshift-master-templates.ts <machine-config-operator clone> <openshift/api clone>');
const releases = Object.fromEntries(BRANCHES.map((b) => [b, releaseOf(dir, api, b)]));
writeFileSync(
  OUT,
  `${JSON.stringify(
    {
      source:
        'openshift/machine-config-operator templates/common and templates/master, platform none, SingleReplica; ' +
        "its controllers' generated MachineConfigs for the default nodes, FeatureGate and images config",
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
