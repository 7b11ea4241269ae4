/**
 * Cross-field checks, one small named function each, run after the schema and
 * before anything on the host changes: the rules that read only the site-config here, those that
 * also need its nmstate state in network-rules.ts.
 */
import type { Finding } from '../../base/findings.js';
import { domainsOf, siteHostsProblem } from '../../kube/openshift.js';
import { isDnsName, type Mirror, type SiteConfigV1 } from './schema.js';
import { type NmstateState } from '../../base/nmstate.js';
import { minutes, worstCase } from './budget.js';

export interface RuleInput {
  config: SiteConfigV1;
  /** the nmstate state, inline or read from nmstateFile (absent before files are read) */
  nmstate?: NmstateState;
  /** how findings inside the nmstate state are located: `$.spec.network.nmstate` or `network.yaml: $` */
  nmstatePath: string;
}

export interface Rule {
  name: string;
  check(input: RuleInput): Finding[];
}

export const error = (path: string, message: string): Finding => ({ severity: 'error', path, message });
export const warning = (path: string, message: string): Finding => ({ severity: 'warning', path, message });

export const networkSourceExactlyOne: Rule = {
  name: 'network-source-exactly-one',
  check: ({ config }) => {
    const { nmstate, nmstateFile } = config.spec.network;
    if (nmstate !== undefined && nmstateFile !== undefined)
      return [error('$.spec.network', 'give nmstate or nmstateFile, not both')];
    if (nmstate === undefined && nmstateFile === undefined)
      return [error('$.spec.network', 'one of nmstate or nmstateFile is required')];
    return [];
  },
};

export const pullSecretSourceAtMostOne: Rule = {
  name: 'pull-secret-source-at-most-one',
  check: ({ config }) =>
    config.spec.pullSecret !== undefined && config.spec.pullSecretFile !== undefined
      ? [error('$.spec', 'give pullSecret or pullSecretFile, not both')]
      : [],
};

/** Lexical half of "files stay in the folder"; the loader checks symlinks when it opens them. */
export function fileNameProblem(name: string): string | undefined {
  if (name.includes('\0')) return 'contains a NUL byte';
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return 'must be relative to the site-config folder';
  if (name.includes('\\')) return 'must use "/" as separator';
  if (name.split('/').some((part) => part === '..')) return 'may not leave the site-config folder';
  return undefined;
}

export function namedFiles(config: SiteConfigV1): { path: string; name: string }[] {
  const { spec } = config;
  const out: { path: string; name: string }[] = [];
  if (spec.network.nmstateFile !== undefined)
    out.push({ path: '$.spec.network.nmstateFile', name: spec.network.nmstateFile });
  if (spec.pullSecretFile !== undefined) out.push({ path: '$.spec.pullSecretFile', name: spec.pullSecretFile });
  if (spec.access?.clientCAFile !== undefined)
    out.push({ path: '$.spec.access.clientCAFile', name: spec.access.clientCAFile });
  if (spec.access?.siteCA !== undefined) {
    out.push({ path: '$.spec.access.siteCA.certFile', name: spec.access.siteCA.certFile });
    out.push({ path: '$.spec.access.siteCA.keyFile', name: spec.access.siteCA.keyFile });
  }
  if (spec.trustBundle?.caBundleFile !== undefined)
    out.push({ path: '$.spec.trustBundle.caBundleFile', name: spec.trustBundle.caBundleFile });
  for (const which of ['ingress', 'api'] as const) {
    const pair = spec.certificates?.[which];
    if (!pair) continue;
    out.push({ path: `$.spec.certificates.${which}.certFile`, name: pair.certFile });
    out.push({ path: `$.spec.certificates.${which}.keyFile`, name: pair.keyFile });
  }
  return out;
}

export const filesStayInFolder: Rule = {
  name: 'files-stay-in-folder',
  check: ({ config }) =>
    namedFiles(config).flatMap(({ path, name }) => {
      const problem = fileNameProblem(name);
      return problem ? [error(path, problem)] : [];
    }),
};

export const dnsNames: Rule = {
  name: 'dns-names',
  check: ({ config }) => {
    const out: Finding[] = [];
    const { baseDomain, hostname, network } = config.spec;
    if (!baseDomain.includes('.'))
      out.push(error('$.spec.baseDomain', 'needs at least two labels, e.g. store42.example.com'));
    // without spec.clusterName the cluster keeps its name, unknown here: counted as one character,
    // and the domain step's plan checks again with the real one
    const { clusterName } = config.spec;
    const tooLong = siteHostsProblem(domainsOf(clusterName ?? 'x', baseDomain));
    const counted = clusterName === undefined ? " (the cluster's name counted as one character)" : '';
    if (tooLong) out.push(error('$.spec.baseDomain', `too long: ${tooLong}${counted}`));
    if (hostname !== undefined && (hostname === 'localhost' || hostname.startsWith('localhost.')))
      out.push(error('$.spec.hostname', 'localhost is not a usable node name'));
    if (hostname !== undefined && hostname.split('.')[0]!.length > 63)
      out.push(error('$.spec.hostname', 'first label longer than 63 characters'));
    (network.verify?.resolve ?? []).forEach((name, i) => {
      if (!isDnsName(name)) out.push(error(`$.spec.network.verify.resolve[${i}]`, 'not a valid DNS name'));
    });
    return out;
  },
};

function duplicateSources(list: Mirror[] | undefined, path: string): Finding[] {
  const seen = new Map<string, number>();
  return (list ?? []).flatMap((m, i) => {
    const first = seen.get(m.source);
    seen.set(m.source, first ?? i);
    return first === undefined
      ? []
      : [error(`${path}[${i}].source`, `duplicate of ${path}[${first}].source (${m.source})`)];
  });
}

export const mirrorSourcesUnique: Rule = {
  name: 'mirror-sources-unique',
  check: ({ config }) => [
    ...duplicateSources(config.spec.imageDigestMirrors, '$.spec.imageDigestMirrors'),
    ...duplicateSources(config.spec.imageTagMirrors, '$.spec.imageTagMirrors'),
  ],
};

const SSH_KEY =
  /^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\n\r]*)?$/;

export const sshKeysWellFormed: Rule = {
  name: 'ssh-keys-well-formed',
  check: ({ config }) =>
    (config.spec.sshAuthorizedKeys ?? []).flatMap((key, i) =>
      SSH_KEY.test(key) ? [] : [error(`$.spec.sshAuthorizedKeys[${i}]`, 'not an OpenSSH public key line')],
    ),
};

export const pullSecretHasRegistries: Rule = {
  name: 'pull-secret-has-registries',
  check: ({ config }) =>
    config.spec.pullSecret !== undefined && Object.keys(config.spec.pullSecret.auths).length === 0
      ? [warning('$.spec.pullSecret.auths', 'no registries: images that need a login will not pull')]
      : [],
};

export const workloadNamedOnce: Rule = {
  name: 'workload-named-once',
  check: ({ config }) =>
    (config.spec.inService?.workloads ?? []).flatMap((w, i) =>
      (w.name === undefined) === (w.selector === undefined)
        ? [error(`$.spec.inService.workloads[${i}]`, 'give name or selector, exactly one')]
        : [],
    ),
};

export const inServiceNotEmpty: Rule = {
  name: 'in-service-not-empty',
  check: ({ config }) => {
    const s = config.spec.inService;
    return s && (s.workloads ?? []).length === 0 && s.probe === undefined
      ? [error('$.spec.inService', 'names neither workloads nor a probe')]
      : [];
  },
};

/** The site's own waits (network checks, health, in service) against spec.budgetMinutes. */
export const timeoutsWithinBudget: Rule = {
  name: 'timeouts-within-budget',
  check: ({ config }) => {
    const budget = worstCase(config);
    const counted = budget.parts.filter((p) => !p.fixed);
    return budget.configuredSeconds > budget.budgetSeconds
      ? [
          warning(
            config.spec.budgetMinutes === undefined ? '$.spec' : '$.spec.budgetMinutes',
            `the timeouts allow ${minutes(budget.configuredSeconds)} at the site, over the budget of ${minutes(budget.budgetSeconds)} (${counted.map((p) => `${p.what} ${minutes(p.seconds)}`).join(', ')})`,
          ),
        ]
      : [];
  },
};

// ---- The site's services: NTP, proxy, trust bundle, node labels (machine networks: network-rules.ts) ----

export const trustBundleSourceExactlyOne: Rule = {
  name: 'trust-bundle-source-exactly-one',
  check: ({ config }) => {
    const bundle = config.spec.trustBundle;
    if (!bundle) return [];
    if (bundle.caBundle !== undefined && bundle.caBundleFile !== undefined)
      return [error('$.spec.trustBundle', 'give caBundle or caBundleFile, not both')];
    if (bundle.caBundle === undefined && bundle.caBundleFile === undefined)
      return [error('$.spec.trustBundle', 'one of caBundle or caBundleFile is required')];
    return [];
  },
};

export const proxyNamesAProxy: Rule = {
  name: 'proxy-names-a-proxy',
  check: ({ config }) => {
    const proxy = config.spec.proxy;
    return proxy && proxy.httpProxy === undefined && proxy.httpsProxy === undefined
      ? [error('$.spec.proxy', 'names neither httpProxy nor httpsProxy (noProxy alone proxies nothing)')]
      : [];
  },
};

/** Labels kubelet sets on its own Node from the machine (LCA's post-pivot leaves the same ones out). */
export const KUBELET_LABELS = [
  'kubernetes.io/hostname',
  'kubernetes.io/arch',
  'kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'node.openshift.io/os_id',
];

export const nodeLabelsNotKubelets: Rule = {
  name: 'node-labels-not-kubelets',
  check: ({ config }) =>
    Object.keys(config.spec.nodeLabels ?? {})
      .filter((key) => KUBELET_LABELS.includes(key))
      .map((key) =>
        error(`$.spec.nodeLabels["${key}"]`, 'kubelet sets this label from the machine itself; leave it out'),
      ),
};

const CHRONY_SOURCE = /^\s*(server|pool|peer|refclock|sourcedir)\s+\S/m;

export const chronyNamesASource: Rule = {
  name: 'chrony-names-a-source',
  check: ({ config }) =>
    config.spec.chronyConfig !== undefined && !CHRONY_SOURCE.test(config.spec.chronyConfig)
      ? [error('$.spec.chronyConfig', 'names no time source (server, pool, peer, refclock or sourcedir line)')]
      : [],
};

// ---- end of the site services rules ----

/** A rename has a name to go to: the site's hostname, which kubelet then registers under. */
export const renameNamesAHostname: Rule = {
  name: 'rename-names-a-hostname',
  check: ({ config }) =>
    config.spec.nodeName === 'rename' && config.spec.hostname === undefined
      ? [error('$.spec.nodeName', 'rename needs spec.hostname: the node is renamed to the site hostname')]
      : [],
};

/** Rules that read only the site-config itself. */
export const documentRules: readonly Rule[] = [
  networkSourceExactlyOne,
  pullSecretSourceAtMostOne,
  filesStayInFolder,
  dnsNames,
  mirrorSourcesUnique,
  sshKeysWellFormed,
  pullSecretHasRegistries,
  workloadNamedOnce,
  inServiceNotEmpty,
  timeoutsWithinBudget,
  trustBundleSourceExactlyOne,
  proxyNamesAProxy,
  nodeLabelsNotKubelets,
  chronyNamesASource,
  renameNamesAHostname,
];

export function runRules(rules: readonly Rule[], input: RuleInput): Finding[] {
  return rules.flatMap((rule) => rule.check(input));
}
