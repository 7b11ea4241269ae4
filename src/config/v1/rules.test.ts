import { describe, expect, it } from 'vitest';
import { baseDocument } from '../../../test/invalid/corpus.js';
import {
  dnsNames,
  fileNameProblem,
  filesStayInFolder,
  mirrorSourcesUnique,
  networkSourceExactlyOne,
  pullSecretHasRegistries,
  pullSecretSourceAtMostOne,
  type Rule,
  sshKeysWellFormed,
  timeoutsWithinBudget,
  workloadNamedOnce,
  inServiceNotEmpty,
  trustBundleSourceExactlyOne,
  proxyNamesAProxy,
  nodeLabelsNotKubelets,
  chronyNamesASource,
  renameNamesAHostname,
} from './rules.js';
import {
  interfaceReferencesKnown,
  internalIpFamilies,
  internalIpOutsideSiteSubnets,
  machineNetworksAreSiteNetworks,
} from './network-rules.js';
import type { SiteConfigV1 } from './schema.js';

type Doc = ReturnType<typeof baseDocument>;

function check(rule: Rule, change: (d: Doc) => void) {
  const doc = baseDocument();
  change(doc);
  const config = doc as SiteConfigV1;
  return rule.check({
    config,
    nmstatePath: '$.spec.network.nmstate',
    ...(config.spec.network.nmstate && { nmstate: config.spec.network.nmstate }),
  });
}

const cases: [string, Rule, (d: Doc) => void, string[]][] = [
  ['network source: inline only is fine', networkSourceExactlyOne, () => undefined, []],
  ['network source: both', networkSourceExactlyOne, (d) => (d.spec.network.nmstateFile = 'n.yaml'), ['$.spec.network']],
  ['network source: neither', networkSourceExactlyOne, (d) => delete d.spec.network.nmstate, ['$.spec.network']],
  [
    'pull secret: file only is fine',
    pullSecretSourceAtMostOne,
    (d) => {
      delete d.spec.pullSecret;
      d.spec.pullSecretFile = 'p.json';
    },
    [],
  ],
  ['pull secret: both', pullSecretSourceAtMostOne, (d) => (d.spec.pullSecretFile = 'p.json'), ['$.spec']],
  ['files: plain name is fine', filesStayInFolder, (d) => (d.spec.pullSecretFile = 'sub/p.json'), []],
  [
    'files: parent folder',
    filesStayInFolder,
    (d) => (d.spec.pullSecretFile = 'a/../../p.json'),
    ['$.spec.pullSecretFile'],
  ],
  [
    'files: absolute cert',
    filesStayInFolder,
    (d) => (d.spec.certificates = { api: { certFile: '/etc/x.crt', keyFile: 'k' } }),
    ['$.spec.certificates.api.certFile'],
  ],
  [
    'rename: with a hostname',
    renameNamesAHostname,
    (d) => Object.assign(d.spec, { nodeName: 'rename', hostname: 'sno-store42' }),
    [],
  ],
  [
    'rename: without a hostname',
    renameNamesAHostname,
    (d) => {
      d.spec.nodeName = 'rename';
      delete d.spec.hostname;
    },
    ['$.spec.nodeName'],
  ],
  [
    'keep: no hostname needed',
    renameNamesAHostname,
    (d) => {
      d.spec.nodeName = 'keep';
      delete d.spec.hostname;
    },
    [],
  ],
  ['dns: valid names', dnsNames, () => undefined, []],
  ['dns: single-label base domain', dnsNames, (d) => (d.spec.baseDomain = 'store'), ['$.spec.baseDomain']],
  [
    'dns: base domain too long for the console hosts',
    dnsNames,
    (d) => (d.spec.baseDomain = Array.from({ length: 4 }, () => 'a'.repeat(55)).join('.')),
    ['$.spec.baseDomain'],
  ],
  ['dns: localhost hostname', dnsNames, (d) => (d.spec.hostname = 'localhost.localdomain'), ['$.spec.hostname']],
  [
    'dns: resolve entry',
    dnsNames,
    (d) => (d.spec.network.verify.resolve = ['ok.example.com', 'bad name']),
    ['$.spec.network.verify.resolve[1]'],
  ],
  ['internal IP: outside site subnet', internalIpOutsideSiteSubnets, () => undefined, []],
  [
    'internal IP: inside site subnet',
    internalIpOutsideSiteSubnets,
    (d) => (d.spec.network.internalIP = '10.42.0.5/24'),
    ['$.spec.network.nmstate.interfaces[0].ipv4.address[0]'],
  ],
  [
    'internal IP: its subnet holds the site address',
    internalIpOutsideSiteSubnets,
    (d) => (d.spec.network.internalIP = '10.0.0.1/8'),
    ['$.spec.network.nmstate.interfaces[0].ipv4.address[0]'],
  ],
  [
    'internal IP: IPv6 against IPv4 site',
    internalIpOutsideSiteSubnets,
    (d) => (d.spec.network.internalIP = 'fd69::2/125'),
    [],
  ],
  [
    'mirrors: distinct sources',
    mirrorSourcesUnique,
    (d) => d.spec.imageDigestMirrors.push({ source: 'other', mirrors: ['m'] }),
    [],
  ],
  [
    'mirrors: duplicate tag source',
    mirrorSourcesUnique,
    (d) =>
      (d.spec.imageTagMirrors = [
        { source: 'a', mirrors: ['m'] },
        { source: 'a', mirrors: ['n'] },
      ]),
    ['$.spec.imageTagMirrors[1].source'],
  ],
  ['ssh: valid key', sshKeysWellFormed, () => undefined, []],
  [
    'ssh: private key pasted',
    sshKeysWellFormed,
    (d) => (d.spec.sshAuthorizedKeys = ['-----BEGIN OPENSSH PRIVATE KEY-----']),
    ['$.spec.sshAuthorizedKeys[0]'],
  ],
  ['references: next hop interface declared', interfaceReferencesKnown, () => undefined, []],
  [
    'references: unknown vlan base',
    interfaceReferencesKnown,
    (d) => d.spec.network.nmstate.interfaces.push({ name: 'v10', vlan: { 'base-iface': 'eno9', id: 10 } }),
    ['$.spec.network.nmstate.interfaces[1].vlan.base-iface'],
  ],
  [
    'dual-stack: one per family',
    internalIpFamilies,
    (d) => (d.spec.network.internalIP = ['fd69::10/64', '192.168.127.10/24']),
    [],
  ],
  [
    'dual-stack: two of one family',
    internalIpFamilies,
    (d) => (d.spec.network.internalIP = ['192.168.127.10/24', '192.168.128.10/24']),
    ['$.spec.network.internalIP[1]'],
  ],
  [
    'dual-stack: machine networks in the same order',
    internalIpFamilies,
    (d) => {
      d.spec.network.internalIP = ['fd69::10/64', '192.168.127.10/24'];
      d.spec.network.machineNetworks = ['fd00:42::/64', '10.42.0.0/24'];
    },
    [],
  ],
  [
    'dual-stack: machine networks in the other order',
    internalIpFamilies,
    (d) => {
      d.spec.network.internalIP = ['fd69::10/64', '192.168.127.10/24'];
      d.spec.network.machineNetworks = ['10.42.0.0/24', 'fd00:42::/64'];
    },
    ['$.spec.network.machineNetworks'],
  ],
  [
    'dual-stack: the second internal IP inside a site subnet',
    internalIpOutsideSiteSubnets,
    (d) => {
      d.spec.network.internalIP = ['192.168.127.10/24', 'fd00:42::99/64'];
      d.spec.network.nmstate.interfaces[0].ipv6 = {
        enabled: true,
        address: [{ ip: 'fd00:42::20', 'prefix-length': 64 }],
      };
    },
    ['$.spec.network.nmstate.interfaces[0].ipv6.address[0]'],
  ],
  [
    'pull secret: no registries',
    pullSecretHasRegistries,
    (d) => (d.spec.pullSecret = { auths: {} }),
    ['$.spec.pullSecret.auths'],
  ],
];

describe('site-config rules', () => {
  it.each<[string, (d: Doc) => void, string[]]>([
    [
      'a workload by name',
      (d) => (d.spec.inService = { workloads: [{ kind: 'Deployment', namespace: 'vdu', name: 'du' }] }),
      [],
    ],
    [
      'a workload by both name and selector',
      (d) =>
        (d.spec.inService = { workloads: [{ kind: 'Deployment', namespace: 'vdu', name: 'du', selector: 'app=du' }] }),
      ['$.spec.inService.workloads[0]'],
    ],
    [
      'a workload by neither',
      (d) => (d.spec.inService = { workloads: [{ kind: 'DaemonSet', namespace: 'vdu' }] }),
      ['$.spec.inService.workloads[0]'],
    ],
  ])('in service: %s', (_name, change, paths) => {
    expect(check(workloadNamedOnce, change).map((f) => f.path)).toEqual(paths);
  });

  it('refuses an inService that names nothing to wait for', () => {
    expect(check(inServiceNotEmpty, (d) => (d.spec.inService = { timeoutSeconds: 60 }))).toEqual([
      { severity: 'error', path: '$.spec.inService', message: 'names neither workloads nor a probe' },
    ]);
  });

  it('warns when the timeouts allow more than the budget, listing every wait', () => {
    const over = check(timeoutsWithinBudget, (d) => {
      d.spec.inService = { workloads: [{ kind: 'Deployment', namespace: 'vdu', name: 'du' }], timeoutSeconds: 900 };
    });
    expect(over).toEqual([
      {
        severity: 'warning',
        path: '$.spec',
        message:
          'the timeouts allow 26.5 min at the site, over the budget of 20 min (network checks 90 s, health 10 min, in service 15 min)',
      },
    ]);
    expect(check(timeoutsWithinBudget, () => undefined)).toEqual([]);
    expect(check(timeoutsWithinBudget, (d) => (d.spec.budgetMinutes = 11))[0]?.path).toBe('$.spec.budgetMinutes');
    expect(check(timeoutsWithinBudget, (d) => (d.spec.budgetMinutes = 12))).toEqual([]);
  });

  it.each(cases)('%s', (_name, rule, change, paths) => {
    expect(check(rule, change).map((f) => f.path)).toEqual(paths);
  });

  it('reports a reference to an undeclared interface as a warning, not an error', () => {
    const [finding] = check(
      interfaceReferencesKnown,
      (d) => (d.spec.network.nmstate.routes.config[0]['next-hop-interface'] = 'eno9'),
    );
    expect(finding?.severity).toBe('warning');
  });

  it.each([
    ['network.yaml', undefined],
    ['sub/dir/file', undefined],
    ['../x', 'may not leave the site-config folder'],
    ['/abs', 'must be relative to the site-config folder'],
    ['C:\\x', 'must be relative to the site-config folder'],
    ['a\\b', 'must use "/" as separator'],
    ['a\0b', 'contains a NUL byte'],
  ])('file name %j', (name, problem) => {
    expect(fileNameProblem(name)).toBe(problem);
  });
});

describe("site-config rules: the site's services", () => {
  const chrony = 'server ntp.store42.example.com iburst\ndriftfile /var/lib/chrony/drift\n';
  it.each<[string, Rule, (d: Doc) => void, string[]]>([
    ['trust bundle: inline', trustBundleSourceExactlyOne, (d) => (d.spec.trustBundle = { caBundle: 'x' }), []],
    [
      'trust bundle: inline and file',
      trustBundleSourceExactlyOne,
      (d) => (d.spec.trustBundle = { caBundle: 'x', caBundleFile: 'ca.pem' }),
      ['$.spec.trustBundle'],
    ],
    [
      'trust bundle: neither',
      trustBundleSourceExactlyOne,
      (d) => (d.spec.trustBundle = { proxyTrustedCA: true }),
      ['$.spec.trustBundle'],
    ],
    [
      'trust bundle: the file stays in the folder',
      filesStayInFolder,
      (d) => (d.spec.trustBundle = { caBundleFile: '../ca.pem' }),
      ['$.spec.trustBundle.caBundleFile'],
    ],
    ['proxy: https only', proxyNamesAProxy, (d) => (d.spec.proxy = { httpsProxy: 'http://proxy:3128' }), []],
    ['proxy: noProxy alone', proxyNamesAProxy, (d) => (d.spec.proxy = { noProxy: '.local' }), ['$.spec.proxy']],
    ['labels: the site own', nodeLabelsNotKubelets, (d) => (d.spec.nodeLabels = { 'store.example.com/id': '42' }), []],
    [
      'labels: one kubelet sets',
      nodeLabelsNotKubelets,
      (d) => (d.spec.nodeLabels = { zone: 'a', 'kubernetes.io/hostname': 'other' }),
      ['$.spec.nodeLabels["kubernetes.io/hostname"]'],
    ],
    ['chrony: a server', chronyNamesASource, (d) => (d.spec.chronyConfig = chrony), []],
    [
      'chrony: no source, only a commented one',
      chronyNamesASource,
      (d) => (d.spec.chronyConfig = '# server ntp.example.com\ndriftfile /var/lib/chrony/drift\n'),
      ['$.spec.chronyConfig'],
    ],
    [
      'machine networks: the site subnet',
      machineNetworksAreSiteNetworks,
      (d) => (d.spec.network.machineNetworks = ['10.42.0.0/24']),
      [],
    ],
    [
      'machine networks: the internal IP subnet',
      machineNetworksAreSiteNetworks,
      (d) => (d.spec.network.machineNetworks = ['10.42.0.0/24', '192.168.0.0/16']),
      // a second IPv4 network, the internal IP's, and none of the site's addresses in it
      ['$.spec.network.machineNetworks[1]', '$.spec.network.machineNetworks[1]', '$.spec.network.machineNetworks[1]'],
    ],
    [
      'machine networks: none of the static addresses',
      machineNetworksAreSiteNetworks,
      (d) => (d.spec.network.machineNetworks = ['10.99.0.0/24']),
      ['$.spec.network.machineNetworks[0]'],
    ],
    [
      'machine networks: any subnet on a DHCP site',
      machineNetworksAreSiteNetworks,
      (d) => {
        d.spec.network.nmstate.interfaces[0].ipv4 = { enabled: true, dhcp: true };
        d.spec.network.machineNetworks = ['10.99.0.0/24'];
      },
      [],
    ],
    [
      'machine networks: two of one family',
      machineNetworksAreSiteNetworks,
      (d) => (d.spec.network.machineNetworks = ['10.42.0.0/24', '10.42.0.0/16']),
      ['$.spec.network.machineNetworks[1]'],
    ],
    [
      'machine networks: dual stack, the IPv6 one against no IPv6 address',
      machineNetworksAreSiteNetworks,
      (d) => (d.spec.network.machineNetworks = ['10.42.0.0/24', 'fd42::/64']),
      [],
    ],
  ])('%s', (_name, rule, change, paths) => {
    expect(check(rule, change).map((f) => f.path)).toEqual(paths);
  });

  it('says why a machine network that holds the internal IP is refused', () => {
    const [finding] = check(
      machineNetworksAreSiteNetworks,
      (d) => (d.spec.network.machineNetworks = ['192.168.127.0/24']),
    );
    expect(finding?.message).toContain('overlaps the internal IP 192.168.127.10/24 ($.spec.network.internalIP)');
  });
});
