/**
 * Invalid site-configs, each with the JSON path (or file) its error must name. Every case is a
 * complete folder: the valid example, changed in one way.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface InvalidCase {
  name: string;
  /** change the parsed valid document */
  mutate?: (doc: Doc) => void;
  /** or replace site-config.yaml's bytes altogether */
  raw?: string | Buffer;
  /** extra setup in the folder (files, symlinks) */
  setup?: (dir: string, outside: string) => void;
  /** the path or file the error message must name */
  names: string;
}

export function baseDocument(): Doc {
  return {
    apiVersion: 'sno-relocate/v1',
    kind: 'SiteConfig',
    metadata: { name: 'store-0042' },
    spec: {
      baseDomain: 'store42.example.com',
      clusterName: 'sno',
      hostname: 'sno-store42',
      network: {
        nmstate: {
          interfaces: [
            {
              name: 'br-ex',
              type: 'ovs-interface',
              state: 'up',
              ipv4: { enabled: true, dhcp: false, address: [{ ip: '10.42.0.20', 'prefix-length': 24 }] },
            },
          ],
          routes: {
            config: [{ destination: '0.0.0.0/0', 'next-hop-address': '10.42.0.1', 'next-hop-interface': 'br-ex' }],
          },
          'dns-resolver': { config: { server: ['10.42.0.53'] } },
        },
        internalIP: '192.168.127.10/24',
        verify: { pingGateway: true, resolve: ['registry.store42.example.com'], timeoutSeconds: 90 },
      },
      pullSecret: { auths: { 'registry.store42.example.com:5000': { auth: 'c2VjcmV0OnNlY3JldA==' } } },
      imageDigestMirrors: [
        {
          source: 'quay.io/openshift-release-dev/ocp-release',
          mirrors: ['registry.store42.example.com:5000/ocp/release'],
        },
      ],
      sshAuthorizedKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0dPb1uZ0d2H5oF4Jt2p0Q9m0cY3o3c8o7y9dJm3G8x support'],
    },
  };
}

const iface = (d: Doc) => d.spec.network.nmstate.interfaces[0];
const useFile = (d: Doc, field: 'nmstateFile', name: string) => {
  delete d.spec.network.nmstate;
  d.spec.network[field] = name;
};
const write = (dir: string, name: string, data: string | Buffer) => {
  mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
  writeFileSync(path.join(dir, name), data);
};
const CERT_PAIR = (d: Doc) => (d.spec.certificates = { ingress: { certFile: 'ingress.crt', keyFile: 'ingress.key' } });

export const INVALID_CASES: InvalidCase[] = [
  // broken YAML
  {
    name: 'unclosed flow mapping',
    raw: 'apiVersion: sno-relocate/v1\nkind: SiteConfig\nmetadata: {name: a\n',
    names: 'site-config.yaml',
  },
  {
    name: 'bad indentation',
    raw: 'apiVersion: sno-relocate/v1\n kind: SiteConfig\nmetadata:\n  name: a\n',
    names: 'site-config.yaml',
  },
  {
    name: 'duplicate key',
    raw: 'apiVersion: sno-relocate/v1\napiVersion: sno-relocate/v1\nkind: SiteConfig\n',
    names: 'duplicated mapping key',
  },
  { name: 'unterminated string', raw: 'apiVersion: "sno-relocate/v1\nkind: SiteConfig\n', names: 'site-config.yaml' },
  { name: 'tab indentation', raw: 'apiVersion: sno-relocate/v1\nmetadata:\n\tname: a\n', names: 'site-config.yaml' },
  { name: 'top level is a list', raw: '- apiVersion: sno-relocate/v1\n', names: 'expected a mapping' },
  { name: 'top level is a scalar', raw: 'just text\n', names: 'expected a mapping' },
  { name: 'empty file', raw: '', names: 'expected a mapping' },
  { name: 'JSON with trailing garbage', raw: '{"apiVersion": "sno-relocate/v1"} }', names: 'site-config.yaml' },
  // YAML features refused
  { name: 'custom js tag', raw: 'apiVersion: !!js/function "function(){}"\n', names: 'site-config.yaml' },
  { name: 'binary tag', raw: 'apiVersion: !!binary aGVsbG8=\n', names: 'site-config.yaml' },
  { name: 'unknown local tag', raw: 'apiVersion: !shell "rm -rf /"\n', names: 'site-config.yaml' },
  {
    name: 'alias bomb',
    raw:
      [
        'a: &a ["x","x","x","x","x","x","x","x","x"]',
        ...'bcdefghi'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`),
      ].join('\n') + '\n',
    names: 'aliases',
  },
  { name: 'alias of a mapping', raw: 'base: &b {x: 1}\napiVersion: sno-relocate/v1\nother: *b\n', names: 'aliases' },
  { name: 'merge key reusing a mapping', raw: 'base: &b {x: 1}\nspec:\n  <<: *b\n', names: 'site-config.yaml' },
  // size, encoding, garbage
  {
    name: '10 MB file',
    raw: `apiVersion: sno-relocate/v1\n# ${'x'.repeat(10 * 1024 * 1024)}\n`,
    names: 'site-config.yaml',
  },
  {
    name: 'binary garbage',
    raw: Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256)),
    names: 'site-config.yaml',
  },
  { name: 'NUL byte', raw: 'apiVersion: sno-relocate/v1\0\n', names: 'site-config.yaml' },
  {
    name: 'UTF-16 text',
    raw: Buffer.from('\ufeffapiVersion: sno-relocate/v1\n', 'utf16le'),
    names: 'site-config.yaml',
  },
  { name: 'invalid UTF-8', raw: Buffer.from([0x61, 0x3a, 0x20, 0xc3, 0x28, 0x0a]), names: 'UTF-8' },
  {
    name: 'deep nesting',
    raw: `apiVersion: sno-relocate/v1\nx: ${'['.repeat(200)}${']'.repeat(200)}\n`,
    names: 'site-config.yaml',
  },
  // apiVersion and kind
  { name: 'wrong apiVersion', mutate: (d) => (d.apiVersion = 'sno-relocate/v2'), names: '$.apiVersion' },
  { name: 'foreign apiVersion', mutate: (d) => (d.apiVersion = 'v1'), names: '$.apiVersion' },
  { name: 'missing apiVersion', mutate: (d) => delete d.apiVersion, names: '$.apiVersion' },
  { name: 'wrong kind', mutate: (d) => (d.kind = 'ConfigMap'), names: '$.kind' },
  { name: 'missing kind', mutate: (d) => delete d.kind, names: '$.kind' },
  // required fields
  { name: 'missing metadata', mutate: (d) => delete d.metadata, names: '$.metadata' },
  { name: 'missing site name', mutate: (d) => delete d.metadata.name, names: '$.metadata.name' },
  { name: 'bad site name', mutate: (d) => (d.metadata.name = 'Store 42!'), names: '$.metadata.name' },
  { name: 'missing baseDomain', mutate: (d) => delete d.spec.baseDomain, names: '$.spec.baseDomain' },
  { name: 'missing network', mutate: (d) => delete d.spec.network, names: '$.spec.network' },
  { name: 'neither nmstate nor nmstateFile', mutate: (d) => delete d.spec.network.nmstate, names: '$.spec.network' },
  {
    name: 'both nmstate and nmstateFile',
    mutate: (d) => (d.spec.network.nmstateFile = 'network.yaml'),
    names: '$.spec.network',
  },
  { name: 'both pullSecret and pullSecretFile', mutate: (d) => (d.spec.pullSecretFile = 'ps.json'), names: '$.spec' },
  // wrong types
  { name: 'site name is a number', mutate: (d) => (d.metadata.name = 42), names: '$.metadata.name' },
  { name: 'baseDomain is a list', mutate: (d) => (d.spec.baseDomain = ['a.com']), names: '$.spec.baseDomain' },
  { name: 'network is a string', mutate: (d) => (d.spec.network = 'dhcp'), names: '$.spec.network' },
  {
    name: 'internalIP is a number',
    mutate: (d) => (d.spec.network.internalIP = 19216812710),
    names: '$.spec.network.internalIP',
  },
  {
    name: 'timeoutSeconds is a string',
    mutate: (d) => (d.spec.network.verify.timeoutSeconds = '90s'),
    names: '$.spec.network.verify.timeoutSeconds',
  },
  {
    name: 'timeoutSeconds too large',
    mutate: (d) => (d.spec.network.verify.timeoutSeconds = 100000),
    names: '$.spec.network.verify.timeoutSeconds',
  },
  {
    name: 'pingGateway is a string',
    mutate: (d) => (d.spec.network.verify.pingGateway = 'yes'),
    names: '$.spec.network.verify.pingGateway',
  },
  {
    name: 'ssh keys is a string',
    mutate: (d) => (d.spec.sshAuthorizedKeys = 'ssh-ed25519 AAAA'),
    names: '$.spec.sshAuthorizedKeys',
  },
  {
    name: 'mirrors is a mapping',
    mutate: (d) => (d.spec.imageDigestMirrors = { source: 'x' }),
    names: '$.spec.imageDigestMirrors',
  },
  {
    name: 'mirror list is a string',
    mutate: (d) => (d.spec.imageDigestMirrors[0].mirrors = 'm.example.com'),
    names: '$.spec.imageDigestMirrors[0].mirrors',
  },
  {
    name: 'interfaces is a mapping',
    mutate: (d) => (d.spec.network.nmstate.interfaces = { name: 'eth0' }),
    names: '$.spec.network.nmstate.interfaces',
  },
  {
    name: 'pullSecret without auths',
    mutate: (d) => (d.spec.pullSecret = { registry: 'x' }),
    names: '$.spec.pullSecret.auths',
  },
  {
    name: 'certificates without keyFile',
    mutate: (d) => (d.spec.certificates = { api: { certFile: 'api.crt' } }),
    names: '$.spec.certificates.api.keyFile',
  },
  // addresses
  {
    name: 'IPv4 address out of range',
    mutate: (d) => (iface(d).ipv4.address[0].ip = '300.1.1.1'),
    names: '$.spec.network.nmstate.interfaces[0].ipv4.address[0].ip',
  },
  {
    name: 'IPv4 address is a name',
    mutate: (d) => (iface(d).ipv4.address[0].ip = 'gateway'),
    names: '$.spec.network.nmstate.interfaces[0].ipv4.address[0].ip',
  },
  {
    name: 'IPv6 address in ipv4',
    mutate: (d) => (iface(d).ipv4.address[0].ip = 'fd00::1'),
    names: '$.spec.network.nmstate.interfaces[0].ipv4.address[0].ip',
  },
  {
    name: 'IPv4 address in ipv6',
    mutate: (d) => (iface(d).ipv6 = { enabled: true, address: [{ ip: '10.0.0.1', 'prefix-length': 64 }] }),
    names: '$.spec.network.nmstate.interfaces[0].ipv6.address[0].ip',
  },
  {
    name: 'IPv4 prefix too long',
    mutate: (d) => (iface(d).ipv4.address[0]['prefix-length'] = 33),
    names: '$.spec.network.nmstate.interfaces[0].ipv4.address[0].prefix-length',
  },
  {
    name: 'IPv6 prefix too long',
    mutate: (d) => (iface(d).ipv6 = { enabled: true, address: [{ ip: 'fd00::1', 'prefix-length': 129 }] }),
    names: '$.spec.network.nmstate.interfaces[0].ipv6.address[0].prefix-length',
  },
  {
    name: 'internalIP without prefix',
    mutate: (d) => (d.spec.network.internalIP = '192.168.127.10'),
    names: '$.spec.network.internalIP',
  },
  {
    name: 'internalIP out of range',
    mutate: (d) => (d.spec.network.internalIP = '192.168.127.300/24'),
    names: '$.spec.network.internalIP',
  },
  {
    name: 'internalIP inside a site subnet',
    mutate: (d) => (d.spec.network.internalIP = '10.42.0.99/24'),
    names: '$.spec.network.nmstate.interfaces[0].ipv4.address[0]',
  },
  {
    name: 'route destination prefix too long',
    mutate: (d) => (d.spec.network.nmstate.routes.config[0].destination = '0.0.0.0/33'),
    names: '$.spec.network.nmstate.routes.config[0].destination',
  },
  {
    name: 'route to keep without destination',
    mutate: (d) => delete d.spec.network.nmstate.routes.config[0].destination,
    names: '$.spec.network.nmstate.routes.config[0].destination',
  },
  {
    name: 'route to keep without next-hop interface',
    mutate: (d) => delete d.spec.network.nmstate.routes.config[0]['next-hop-interface'],
    names: '$.spec.network.nmstate.routes.config[0].next-hop-interface',
  },
  {
    name: 'blackhole route with a next hop',
    mutate: (d) => (d.spec.network.nmstate.routes.config[0]['route-type'] = 'blackhole'),
    names: '$.spec.network.nmstate.routes.config[0].route-type',
  },
  {
    name: 'route weight out of range',
    mutate: (d) => (d.spec.network.nmstate.routes.config[0].weight = 300),
    names: '$.spec.network.nmstate.routes.config[0].weight',
  },
  {
    name: 'route rule that matches nothing',
    mutate: (d) => (d.spec.network.nmstate['route-rules'] = { config: [{ priority: 100, 'route-table': 200 }] }),
    names: '$.spec.network.nmstate.route-rules.config[0]',
  },
  {
    name: 'route rule fwmask without fwmark',
    mutate: (d) => (d.spec.network.nmstate['route-rules'] = { config: [{ family: 'ipv4', fwmask: 255 }] }),
    names: '$.spec.network.nmstate.route-rules.config[0].fwmask',
  },
  {
    name: 'DNS option nmstate does not set',
    mutate: (d) => (d.spec.network.nmstate['dns-resolver'].config.options = ['ndots']),
    names: '$.spec.network.nmstate.dns-resolver.config.options[0]',
  },
  {
    name: 'bond mode unknown to the kernel',
    mutate: (d) =>
      d.spec.network.nmstate.interfaces.push({
        name: 'bond0',
        type: 'bond',
        'link-aggregation': { mode: 'round-robin', port: ['eth1'] },
      }),
    names: '$.spec.network.nmstate.interfaces[1].link-aggregation.mode',
  },
  {
    name: 'route next hop is a name',
    mutate: (d) => (d.spec.network.nmstate.routes.config[0]['next-hop-address'] = 'router'),
    names: '$.spec.network.nmstate.routes.config[0].next-hop-address',
  },
  {
    name: 'DNS server truncated',
    mutate: (d) => (d.spec.network.nmstate['dns-resolver'].config.server = ['8.8.8']),
    names: '$.spec.network.nmstate.dns-resolver.config.server[0]',
  },
  {
    name: 'interface name too long',
    mutate: (d) => (iface(d).name = 'a-very-long-interface'),
    names: '$.spec.network.nmstate.interfaces[0].name',
  },
  {
    name: 'VLAN id out of range',
    mutate: (d) =>
      d.spec.network.nmstate.interfaces.push({
        name: 'vlan5000',
        type: 'vlan',
        vlan: { 'base-iface': 'br-ex', id: 5000 },
      }),
    names: '$.spec.network.nmstate.interfaces[1].vlan.id',
  },
  {
    name: 'interface state unknown',
    mutate: (d) => (iface(d).state = 'on'),
    names: '$.spec.network.nmstate.interfaces[0].state',
  },
  // DNS names
  {
    name: 'baseDomain uppercase',
    mutate: (d) => (d.spec.baseDomain = 'Store42.Example.com'),
    names: '$.spec.baseDomain',
  },
  { name: 'baseDomain single label', mutate: (d) => (d.spec.baseDomain = 'store42'), names: '$.spec.baseDomain' },
  {
    name: 'baseDomain with underscore',
    mutate: (d) => (d.spec.baseDomain = 'store_42.example.com'),
    names: '$.spec.baseDomain',
  },
  { name: 'hostname localhost', mutate: (d) => (d.spec.hostname = 'localhost'), names: '$.spec.hostname' },
  { name: 'hostname with spaces', mutate: (d) => (d.spec.hostname = 'sno store'), names: '$.spec.hostname' },
  { name: 'clusterName with a dot', mutate: (d) => (d.spec.clusterName = 'sno.x'), names: '$.spec.clusterName' },
  {
    name: 'verify.resolve not a name',
    mutate: (d) => (d.spec.network.verify.resolve = ['http://registry']),
    names: '$.spec.network.verify.resolve[0]',
  },
  // mirrors and keys
  {
    name: 'duplicate mirror source',
    mutate: (d) => d.spec.imageDigestMirrors.push(structuredClone(d.spec.imageDigestMirrors[0])),
    names: '$.spec.imageDigestMirrors[1].source',
  },
  {
    name: 'empty mirror list',
    mutate: (d) => (d.spec.imageDigestMirrors[0].mirrors = []),
    names: '$.spec.imageDigestMirrors[0].mirrors',
  },
  {
    name: 'unknown mirror policy',
    mutate: (d) => (d.spec.imageDigestMirrors[0].mirrorSourcePolicy = 'Sometimes'),
    names: '$.spec.imageDigestMirrors[0].mirrorSourcePolicy',
  },
  {
    name: 'ssh key not a key',
    mutate: (d) => (d.spec.sshAuthorizedKeys = ['hunter2']),
    names: '$.spec.sshAuthorizedKeys[0]',
  },
  {
    name: 'pull secret policy unknown',
    mutate: (d) => (d.spec.pullSecretPolicy = 'append'),
    names: '$.spec.pullSecretPolicy',
  },
  // files named by the site-config
  {
    name: 'nmstateFile climbs out',
    mutate: (d) => useFile(d, 'nmstateFile', '../network.yaml'),
    names: '$.spec.network.nmstateFile',
  },
  {
    name: 'nmstateFile absolute',
    mutate: (d) => useFile(d, 'nmstateFile', '/etc/passwd'),
    names: '$.spec.network.nmstateFile',
  },
  {
    name: 'nmstateFile with backslashes',
    mutate: (d) => useFile(d, 'nmstateFile', '..\\network.yaml'),
    names: '$.spec.network.nmstateFile',
  },
  {
    name: 'nmstateFile missing',
    mutate: (d) => useFile(d, 'nmstateFile', 'network.yaml'),
    names: '$.spec.network.nmstateFile',
  },
  {
    name: 'nmstateFile is a folder',
    mutate: (d) => useFile(d, 'nmstateFile', 'net'),
    setup: (dir) => mkdirSync(path.join(dir, 'net')),
    names: '$.spec.network.nmstateFile',
  },
  {
    name: 'nmstateFile symlink to /etc/passwd',
    mutate: (d) => useFile(d, 'nmstateFile', 'network.yaml'),
    setup: (dir) => symlinkSync('/etc/passwd', path.join(dir, 'network.yaml')),
    names: '$.spec.network.nmstateFile',
  },
  {
    name: 'nmstateFile symlink out of the folder',
    mutate: (d) => useFile(d, 'nmstateFile', 'network.yaml'),
    setup: (dir, outside) => {
      write(outside, 'network.yaml', 'interfaces: []\n');
      symlinkSync(path.join(outside, 'network.yaml'), path.join(dir, 'network.yaml'));
    },
    names: '$.spec.network.nmstateFile',
  },
  {
    name: 'pullSecretFile through a symlinked folder',
    mutate: (d) => {
      delete d.spec.pullSecret;
      d.spec.pullSecretFile = 'secrets/ps.json';
    },
    setup: (dir, outside) => {
      write(outside, 'ps.json', '{"auths":{}}');
      symlinkSync(outside, path.join(dir, 'secrets'));
    },
    names: '$.spec.pullSecretFile',
  },
  {
    name: 'nmstateFile with a bad address',
    mutate: (d) => useFile(d, 'nmstateFile', 'network.yaml'),
    setup: (dir) =>
      write(
        dir,
        'network.yaml',
        'interfaces:\n  - name: eth0\n    ipv4: {enabled: true, address: [{ip: 10.0.0.256, prefix-length: 24}]}\n',
      ),
    names: 'network.yaml: $.interfaces[0].ipv4.address[0].ip',
  },
  {
    name: 'nmstateFile of 10 MB',
    mutate: (d) => useFile(d, 'nmstateFile', 'network.yaml'),
    setup: (dir) => write(dir, 'network.yaml', `# ${'x'.repeat(10 * 1024 * 1024)}\n`),
    names: '$.spec.network.nmstateFile',
  },
  {
    name: 'nmstateFile is binary',
    mutate: (d) => useFile(d, 'nmstateFile', 'network.yaml'),
    setup: (dir) => write(dir, 'network.yaml', Buffer.from([0x00, 0xff, 0x10, 0x80])),
    names: '$.spec.network.nmstateFile',
  },
  {
    name: 'pullSecretFile not JSON',
    mutate: (d) => {
      delete d.spec.pullSecret;
      d.spec.pullSecretFile = 'ps.json';
    },
    setup: (dir) => write(dir, 'ps.json', '{"auths": {"r": {"auth": "c2VjcmV0"}}'),
    names: '$.spec.pullSecretFile',
  },
  { name: 'certificate file missing', mutate: CERT_PAIR, names: '$.spec.certificates.ingress.certFile' },
  {
    name: 'certificate file not PEM',
    mutate: CERT_PAIR,
    setup: (dir) => {
      write(dir, 'ingress.crt', 'not a certificate');
      write(dir, 'ingress.key', 'not a key');
    },
    names: '$.spec.certificates.ingress.certFile',
  },
  // the site's services: chrony, proxy, trust bundle, node labels, machine networks
  {
    name: 'chrony config without a time source',
    mutate: (d) => (d.spec.chronyConfig = 'makestep 1 3\n'),
    names: '$.spec.chronyConfig',
  },
  {
    name: 'proxy URL without a scheme',
    mutate: (d) => (d.spec.proxy = { httpProxy: 'proxy.store42.example.com:3128' }),
    names: '$.spec.proxy.httpProxy',
  },
  { name: 'proxy with only noProxy', mutate: (d) => (d.spec.proxy = { noProxy: '.local' }), names: '$.spec.proxy' },
  {
    name: 'noProxy with spaces',
    mutate: (d) => (d.spec.proxy = { httpProxy: 'http://p:3128', noProxy: '.local, 10.0.0.0/8' }),
    names: '$.spec.proxy.noProxy',
  },
  {
    name: 'trust bundle not PEM',
    mutate: (d) => (d.spec.trustBundle = { caBundle: 'not a certificate' }),
    names: '$.spec.trustBundle.caBundle: not PEM certificates',
  },
  {
    name: 'trust bundle holding a private key',
    mutate: (d) => (d.spec.trustBundle = { caBundleFile: 'trust.pem' }),
    setup: (dir) =>
      write(
        dir,
        'trust.pem',
        '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n',
      ),
    names: '$.spec.trustBundle.caBundleFile: holds a PRIVATE KEY block: a trust bundle holds certificates only',
  },
  {
    name: 'trust bundle file missing',
    mutate: (d) => (d.spec.trustBundle = { caBundleFile: 'trust.pem' }),
    names: '$.spec.trustBundle.caBundleFile',
  },
  {
    name: 'node label kubelet sets',
    mutate: (d) => (d.spec.nodeLabels = { 'kubernetes.io/hostname': 'other' }),
    names: '$.spec.nodeLabels["kubernetes.io/hostname"]',
  },
  {
    name: 'node label key with a space',
    mutate: (d) => (d.spec.nodeLabels = { 'store id': '42' }),
    names: '$.spec.nodeLabels',
  },
  {
    name: 'machine network holding the internal IP',
    mutate: (d) => (d.spec.network.machineNetworks = ['192.168.127.0/24']),
    names: '$.spec.network.machineNetworks[0]: overlaps the internal IP',
  },
  {
    name: 'machine network without the site address',
    mutate: (d) => (d.spec.network.machineNetworks = ['10.99.0.0/24']),
    names: '$.spec.network.machineNetworks[0]: holds none of the site',
  },
  {
    name: 'machine network not a CIDR',
    mutate: (d) => (d.spec.network.machineNetworks = ['10.42.0.0']),
    names: '$.spec.network.machineNetworks[0]',
  },
];

export function layCase(dir: string, outside: string, c: InvalidCase): void {
  mkdirSync(dir, { recursive: true });
  c.setup?.(dir, outside);
  if (c.raw !== undefined) return write(dir, 'site-config.yaml', c.raw);
  const doc = baseDocument();
  c.mutate?.(doc);
  write(dir, 'site-config.yaml', yaml.dump(doc));
}
