/**
 * The MachineConfigs the machine-config operator's controllers generate for the master pool of
 * this cluster from its cluster resources, per release branch, read from clones of
 * openshift/machine-config-operator and openshift/api (used by openshift-master-templates.ts).
 *
 * The cluster: nodes.config `cluster` with an empty spec, the FeatureGate `cluster` with the
 * Default feature set, images.config `cluster` with an empty spec, no ImageContentSourcePolicy,
 * ImageDigestMirrorSet, ImageTagMirrorSet, KubeletConfig or ContainerRuntimeConfig. For it the
 * controllers make three MachineConfigs (pkg/controller/bootstrap/bootstrap.go, release-4.18
 * :178-234, the same set in 4.14-4.17; names from common/helpers.go:985 GetManagedKey
 * `<prefix>-<pool>-generated-<suffix>`, a pool UID only in the names of clusters made before 4.2):
 *
 * - 97-master-generated-kubelet, the node config controller (kubelet-config/
 *   kubelet_config_nodes.go release-4.18 :101-167, 4.17 :97-163, 4.14-4.16 :91-157): the
 *   template's kubelet.conf with the feature gates, through the kubelet config encoder (a worker
 *   pool only also gets the worker latency profile), and the kernel arguments of cgroups v2
 *   (helpers.go:153-188 updateMachineConfigwithCgroup). It exists without a nodes.config too
 *   (bootstrap.go release-4.18 :211-226 makes a default one).
 * - 98-master-generated-kubelet, the feature gate controller (kubelet_config_features.go
 *   release-4.18 :76-128, 203-225; 4.14 :68-119, 194-226): the same kubelet.conf. Both are
 *   /etc/kubernetes/kubelet.conf, mode 0644 (common/helpers.go:1153-1169
 *   NewIgnFileBytesOverwriting); merged by name, 98's wins over 97's and 01-master-kubelet's.
 * - 99-master-generated-registries, the container runtime config controller
 *   (container-runtime-config/container_runtime_config_controller.go release-4.18 :824-967,
 *   1009-1078): registries.conf only when there are insecure or blocked registries or mirror sets
 *   (:1028), policy.json only with blocked or allowed registries or image policies (:1041), the
 *   search registries file only with search registries (:1072), and createNewIgnition
 *   (helpers.go:148-161) skips a file with no data. With an empty images.config it declares no
 *   file; so in 4.14-4.17 (:911, :924, :941 in 4.14-4.15; :993, :1006, :1030 in 4.16). No TOML is
 *   written for this cluster, so no TOML writer is needed here.
 *
 * Nothing here depends on a live cluster's UID or timestamps: the MachineConfigs' annotations
 * (the controller's version hash) and owner references are not part of the node's files.
 */
import { execFileSync } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import yaml from 'js-yaml';

const git = (dir: string, ...args: string[]): string =>
  execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });

/** The vendored openshift/api commit of an MCO branch (vendor/modules.txt). */
function vendoredApiCommit(mco: string, branch: string): string {
  const m = /^# github\.com\/openshift\/api v0\.0\.0-\d+-([0-9a-f]{12})$/m.exec(
    git(mco, 'show', `${branch}:vendor/modules.txt`),
  );
  if (!m) throw new Error(`${branch}: no vendored openshift/api pseudo-version`);
  return m[1]!;
}

/**
 * The FeatureGate's enabled and disabled gates for the Default feature set, as the MCO's vendored
 * openshift/api gives them; featureGateAccess.CurrentFeatureGates().KnownFeatures() is both lists
 * (library-go pkg/operator/configobserver/featuregates). 4.15's api (e54a015ffc8c) and later carry
 * the rendered FeatureGate in payload-manifests/featuregates: featureGate-Default.yaml in 4.15,
 * featureGate-SelfManagedHA-Default.yaml from 4.16 (a single-node cluster has the
 * self-managed-high-availability profile). 4.14's api (600991d550ac) has only Go:
 * config/v1/types_feature.go:187-199 defaultFeatures, its gates' names in feature_gates.go
 * (`<var> = FeatureGateDescription{... Name: <constant>`, `<constant> = FeatureGateName("<name>")`).
 * On a live cluster the cluster-config-operator writes the FeatureGate's status from its own
 * vendored api; the MCO's is the one read here.
 */
export function defaultFeatureGates(api: string, mco: string, branch: string): Map<string, boolean> {
  const commit = vendoredApiCommit(mco, branch);
  const files = git(api, 'ls-tree', '--name-only', commit, 'payload-manifests/featuregates/').split('\n');
  const manifest = ['featureGate-SelfManagedHA-Default.yaml', 'featureGate-Default.yaml']
    .map((n) => `payload-manifests/featuregates/${n}`)
    .find((p) => files.includes(p));
  const gates = new Map<string, boolean>();
  if (manifest) {
    const fg = yaml.load(git(api, 'show', `${commit}:${manifest}`)) as {
      status: { featureGates: { enabled?: { name: string }[]; disabled?: { name: string }[] }[] };
    };
    const [details] = fg.status.featureGates;
    for (const { name } of details?.enabled ?? []) gates.set(name, true);
    for (const { name } of details?.disabled ?? []) gates.set(name, false);
    return gates;
  }
  const types = git(api, 'show', `${commit}:config/v1/types_feature.go`);
  const names = git(api, 'show', `${commit}:config/v1/feature_gates.go`);
  const block = /var defaultFeatures = &FeatureGateEnabledDisabled\{([\s\S]*?)\n\}/.exec(types)?.[1];
  if (!block) throw new Error(`openshift/api ${commit}: no defaultFeatures`);
  for (const [list, enabled] of [
    ['Enabled', true],
    ['Disabled', false],
  ] as const) {
    const vars = new RegExp(`${list}: \\[\\]FeatureGateDescription\\{([^}]*)\\}`).exec(block)?.[1] ?? '';
    for (const v of vars.matchAll(/^\s*(\w+),/gm)) {
      const constant = new RegExp(
        `${v[1]!}\\s+= FeatureGateDescription\\{\\s*FeatureGateAttributes: FeatureGateAttributes\\{\\s*Name: (\\w+),`,
      ).exec(names)?.[1];
      const name = constant && new RegExp(`^\\s*${constant}\\s+= FeatureGateName\\("(\\w+)"\\)`, 'm').exec(names)?.[1];
      if (!name) throw new Error(`openshift/api ${commit}: no name for ${v[1]!}`);
      gates.set(name, enabled);
    }
  }
  return gates;
}

/** A Go type as encoding/json sees it, read from the vendored Go source. */
type GoType =
  | { kind: 'basic'; name: 'string' | 'bool' | 'int' | 'float' }
  | { kind: 'ptr' | 'slice'; elem: GoType }
  | { kind: 'map'; elem: GoType }
  | { kind: 'struct'; name: string }
  /** types with their own MarshalJSON: metav1.Duration (a string), time.Duration and
   * logsapi.TimeOrMetaDuration (nanoseconds, a number; a string only when read from one),
   * resource.QuantityValue (a string, "0" when zero) */
  | { kind: 'duration' | 'nanoseconds' | 'quantity' };
interface Field {
  name: string;
  type: GoType;
  omitempty: boolean;
  inline: boolean;
}

/**
 * The structs and named types of Go source files, keyed by `<pkg alias>.<Name>` (alias '' for the
 * kubelet's own package): fields with their json tags, in declaration order.
 */
function goTypes(sources: Record<string, string>) {
  const structs = new Map<string, Field[]>();
  const named = new Map<string, string>();
  const raw = new Map<string, string[]>();
  for (const [alias, source] of Object.entries(sources)) {
    const prefix = alias === '' ? '' : `${alias}.`;
    for (const m of source.matchAll(/^type (\w+) struct \{\n([\s\S]*?)^\}/gm)) raw.set(prefix + m[1]!, [alias, m[2]!]);
    for (const m of source.matchAll(/^type (\w+) (\S+)$/gm)) named.set(prefix + m[1]!, m[2]!);
  }
  const special: Record<string, GoType> = {
    'metav1.Duration': { kind: 'duration' },
    'time.Duration': { kind: 'nanoseconds' },
    'logsapi.TimeOrMetaDuration': { kind: 'nanoseconds' },
    'resource.QuantityValue': { kind: 'quantity' },
  };
  const resolve = (t: string, alias: string): GoType => {
    if (t.startsWith('*')) return { kind: 'ptr', elem: resolve(t.slice(1), alias) };
    if (t.startsWith('[]')) return { kind: 'slice', elem: resolve(t.slice(2), alias) };
    const map = /^map\[string\](.+)$/.exec(t);
    if (map) return { kind: 'map', elem: resolve(map[1]!, alias) };
    if (t === 'string') return { kind: 'basic', name: 'string' };
    if (t === 'bool') return { kind: 'basic', name: 'bool' };
    if (/^u?int(8|16|32|64)?$/.test(t)) return { kind: 'basic', name: 'int' };
    if (/^float(32|64)$/.test(t)) return { kind: 'basic', name: 'float' };
    const key = t.includes('.') ? t : alias === '' ? t : `${alias}.${t}`;
    if (special[key]) return special[key];
    if (raw.has(key)) return { kind: 'struct', name: key };
    const under = named.get(key);
    if (under) return resolve(under, alias);
    // a type of a package not read here (core/v1 Taint and ResourceList, tracing): only ever nil
    return { kind: 'struct', name: key };
  };
  const fields = (name: string): Field[] => {
    const known = structs.get(name);
    if (known) return known;
    if (name === 'metav1.TypeMeta')
      return [
        { name: 'kind', type: { kind: 'basic', name: 'string' }, omitempty: true, inline: false },
        { name: 'apiVersion', type: { kind: 'basic', name: 'string' }, omitempty: true, inline: false },
      ];
    const r = raw.get(name);
    if (!r) throw new Error(`a Go type this script has not read: ${name}`);
    const [alias, body] = r;
    const out: Field[] = [];
    for (const line of body!.split('\n')) {
      const m = /^\s*(?:(\w+)\s+)?([\w.*[\]]+)\s+`json:"([^"]*)"/.exec(line);
      if (!m) continue;
      const [tagName, ...opts] = m[3]!.split(',');
      if (tagName === '-') continue;
      const type = resolve(m[2]!, alias!);
      out.push({
        name: tagName || m[1]!,
        type,
        omitempty: opts.includes('omitempty'),
        inline: opts.includes('inline'),
      });
    }
    structs.set(name, out);
    return out;
  };
  return fields;
}

/** time.ParseDuration for the units the templates use, in nanoseconds. */
function parseDuration(s: string): number {
  const unit: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };
  if (s === '0') return 0;
  let ns = 0;
  const rest = s.replace(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g, (_, n: string, u: string) => {
    ns += Number(n) * unit[u]!;
    return '';
  });
  if (rest !== '' || s === '') throw new Error(`not a Go duration: ${s}`);
  return Math.round(ns);
}

/** time.Duration.String (go/src/time/time.go), for whole nanoseconds. */
export function formatDuration(ns: number): string {
  if (ns === 0) return '0s';
  const sign = ns < 0 ? '-' : '';
  const u = Math.abs(ns);
  const frac = (v: number, digits: number): string => {
    const whole = Math.floor(v / 10 ** digits);
    const f = String(v % 10 ** digits)
      .padStart(digits, '0')
      .replace(/0+$/, '');
    return f ? `${whole}.${f}` : String(whole);
  };
  if (u < 1e9) {
    if (u < 1e3) return `${sign}${u}ns`;
    if (u < 1e6) return `${sign}${frac(u, 3)}µs`;
    return `${sign}${frac(u, 6)}ms`;
  }
  const secs = Math.floor(u / 1e9);
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs % 3600) / 60);
  const s = `${frac((secs % 60) * 1e9 + (u % 1e9), 9)}s`;
  return sign + (h > 0 ? `${h}h${m}m${s}` : m > 0 ? `${m}m${s}` : s);
}

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

/**
 * What a value read from YAML (sigs.k8s.io/yaml.Unmarshal into the typed struct, unknown fields
 * dropped by encoding/json) encodes to with encoding/json: struct fields in declaration order, an
 * absent field as its zero value, `omitempty` leaving out false, 0, "", nil pointers (a pointer
 * to false stays) and empty slices and maps but never a struct (encoding/json isEmptyValue), map
 * keys sorted.
 */
function encode(fields: (name: string) => Field[], type: GoType, value: unknown, where: string): Json {
  switch (type.kind) {
    case 'basic':
      if (value === undefined) return type.name === 'string' ? '' : type.name === 'bool' ? false : 0;
      if (type.name === 'string' && typeof value === 'string') return value;
      if (type.name === 'bool' && typeof value === 'boolean') return value;
      if (type.name !== 'string' && type.name !== 'bool' && typeof value === 'number') {
        if (type.name === 'int' && !Number.isInteger(value)) throw new Error(`${where}: not an integer`);
        return value;
      }
      throw new Error(`${where}: ${JSON.stringify(value)} is not a Go ${type.name}`);
    case 'ptr':
      return value === undefined || value === null ? null : encode(fields, type.elem, value, where);
    case 'slice':
      if (value === undefined || value === null) return null;
      if (!Array.isArray(value)) throw new Error(`${where}: not a list`);
      return value.map((v, i) => encode(fields, type.elem, v, `${where}[${i}]`));
    case 'map': {
      if (value === undefined || value === null) return null;
      if (typeof value !== 'object') throw new Error(`${where}: not a map`);
      const v = value as Record<string, unknown>;
      return Object.fromEntries(
        Object.keys(v)
          .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
          .map((k) => [k, encode(fields, type.elem, v[k], `${where}.${k}`)]),
      );
    }
    case 'duration':
      if (value === undefined) return '0s';
      if (typeof value !== 'string') throw new Error(`${where}: a duration is a string`);
      return formatDuration(parseDuration(value));
    case 'nanoseconds':
      if (value === undefined) return 0;
      throw new Error(`${where}: the templates set no ${where}`);
    case 'quantity':
      if (value === undefined) return '0';
      throw new Error(`${where}: the templates set no ${where}`);
    case 'struct': {
      const v = (value ?? {}) as Record<string, unknown>;
      if (typeof v !== 'object') throw new Error(`${where}: not an object`);
      const out: Record<string, Json> = {};
      const seen = new Set<string>();
      const fill = (name: string) => {
        for (const f of fields(name)) {
          if (f.inline && f.type.kind === 'struct') {
            fill(f.type.name);
            continue;
          }
          seen.add(f.name);
          const e = encode(fields, f.type, v[f.name], `${where}.${f.name}`);
          const k = f.type.kind;
          const empty =
            e === null ||
            (k === 'basic' && (e === false || e === 0 || e === '')) ||
            (k === 'slice' && (e as Json[]).length === 0) ||
            (k === 'map' && Object.keys(e as object).length === 0);
          if (!(f.omitempty && empty)) out[f.name] = e;
        }
      };
      fill(type.name);
      const unknown = Object.keys(v).filter((k) => !seen.has(k));
      if (unknown.length > 0)
        throw new Error(`${where}: fields the vendored Go type does not have: ${unknown.join(', ')}`);
      return out;
    }
  }
}

/**
 * yaml.v2's key order (gopkg.in/yaml.v2 sorter.go keyList.Less, vendored as
 * sigs.k8s.io/yaml/goyaml.v2/sorter.go:12-80 in release-4.18): letters by code point, a non-letter
 * before a letter, digit runs by their number.
 */
export function yamlV2Less(a: string, b: string): number {
  const ar = [...a];
  const br = [...b];
  const letter = (c: string) => /\p{L}/u.test(c);
  const digit = (c: string | undefined) => c !== undefined && /\p{Nd}/u.test(c);
  for (let i = 0; i < ar.length && i < br.length; i++) {
    if (ar[i] === br[i]) continue;
    const al = letter(ar[i]!);
    const bl = letter(br[i]!);
    if (al && bl) return ar[i]! < br[i]! ? -1 : 1;
    if (al || bl) return bl ? -1 : 1;
    let an = 0;
    let bn = 0;
    if (ar[i] === '0' || br[i] === '0')
      for (let j = i - 1; j >= 0 && digit(ar[j]); j--)
        if (ar[j] !== '0') {
          an = 1;
          bn = 1;
          break;
        }
    let ai = i;
    let bi = i;
    for (; digit(ar[ai]); ai++) an = an * 10 + Number(ar[ai]);
    for (; digit(br[bi]); bi++) bn = bn * 10 + Number(br[bi]);
    if (an !== bn) return an < bn ? -1 : 1;
    if (ai !== bi) return ai < bi ? -1 : 1;
    return ar[i]! < br[i]! ? -1 : 1;
  }
  return ar.length === br.length ? 0 : ar.length < br.length ? -1 : 1;
}

/**
 * /etc/kubernetes/kubelet.conf as the kubelet config controller writes it: the template's
 * kubelet.conf (generateOriginalKubeletConfigIgn renders the same templates with the same values,
 * kubelet_config_controller.go release-4.18 :454-471, 4.14-4.16 :391-407) decoded into the vendored
 * k8s.io/kubelet config/v1beta1 KubeletConfiguration (helpers.go:420-427 DecodeKubeletConfig), the
 * FeatureGate's gates merged over the template's (kubelet_config_controller.go release-4.18
 * :440-449 mergo.Merge WithOverride), then encoded by apimachinery's serializer
 * (runtime/serializer/json/json.go:223-247 doEncode): 4.14-4.16 as JSON, one line and a newline
 * (helpers.go release-4.14 :447-478 runtime.ContentTypeJSON); 4.17-4.18 as YAML, that JSON through
 * sigs.k8s.io/yaml JSONToYAML (release-4.18 helpers.go:452-460 runtime.ContentTypeYAML), so keys
 * in yaml.v2's order, lists not indented under their key, strings quoted only where YAML would
 * read them as something else.
 */
export function generatedKubeletConf(
  mco: string,
  api: string,
  branch: string,
  template: string,
): { contents: string; featureGates: number } {
  const show = (p: string) => git(mco, 'show', `${branch}:vendor/${p}`);
  const fields = goTypes({
    '': show('k8s.io/kubelet/config/v1beta1/types.go'),
    logsapi: show('k8s.io/component-base/logs/api/v1/types.go'),
  });
  const parsed = yaml.load(template) as Record<string, unknown>;
  const gates = defaultFeatureGates(api, mco, branch);
  const merged = { ...parsed, featureGates: { ...(parsed.featureGates as object), ...Object.fromEntries(gates) } };
  const json = encode(fields, { kind: 'struct', name: 'KubeletConfiguration' }, merged, 'KubeletConfiguration');
  const yamlOutput = /runtime\.ContentTypeYAML\)/.test(
    git(mco, 'show', `${branch}:pkg/controller/kubelet-config/helpers.go`),
  );
  if (!yamlOutput) {
    // encoding/json escapes <, > and & (HTMLEscape); none occurs in a kubelet config
    const line = JSON.stringify(json);
    if (/[<>&\u2028\u2029]/.test(line)) throw new Error('kubelet.conf: a character encoding/json escapes');
    return { contents: `${line}\n`, featureGates: gates.size };
  }
  const contents = yaml.dump(json, {
    sortKeys: yamlV2Less,
    noArrayIndent: true,
    quotingType: '"',
    lineWidth: -1,
    noRefs: true,
  });
  // yaml.v2 folds a plain scalar longer than its 80-column width; none here may need it
  if (contents.split('\n').some((l) => l.length > 80)) throw new Error('kubelet.conf: a line yaml.v2 would fold');
  if (!isDeepStrictEqual(yaml.load(contents), json)) throw new Error('kubelet.conf: the YAML does not read back');
  return { contents, featureGates: gates.size };
}

/**
 * The kernel arguments 97-master-generated-kubelet carries for cgroups v2 (nodes.config's empty
 * cgroupMode): helpers.go release-4.18 :153-188, psi=1 in 4.14-4.15 (:176), psi=0 from 4.16.
 */
export function cgroupKernelArguments(mco: string, branch: string): string[] {
  const m = /kernelArgsv2\s+= \[\]string\{(.*)\}/.exec(
    git(mco, 'show', `${branch}:pkg/controller/kubelet-config/helpers.go`),
  );
  if (!m) throw new Error(`${branch}: no kernelArgsv2`);
  return [...m[1]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((a) => JSON.parse(`"${a[1]!}"`) as string);
}
