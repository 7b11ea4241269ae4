import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { siteConfigSchema } from '../v1/schema.js';
import { FIELD_TABLE } from './field-table.js';
import { mirrorsFromFile, seedReconfigurationSchema } from './seed-reconfiguration.js';
import { isEmpty, sourceOf, translateSeedReconfiguration } from './to-native.js';

interface JsonSchema {
  properties?: Record<string, JsonSchema>;
}

/** IBIO's own test manifest (internal/installer/installer_test.go, secretSeedReconfig), keys shortened. */
const RSA_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs1', format: 'pem' })
  .toString();

const ibioExample = {
  api_version: 1,
  base_domain: 'example.com',
  cluster_id: 'e6a68c95-0e2c-4b5a-9f62-3c0e1d2f8a11',
  cluster_name: 'test',
  hostname: 'ostest-extraworker-0',
  infra_id: 'test-sktvm',
  kubeadmin_password_hash: '$2a$10$abc',
  KubeconfigCryptoRetention: {
    KubeAPICrypto: {
      ServingCrypto: {
        localhost_signer_private_key: '-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----',
      },
      ClientAuthCrypto: { admin_ca_certificate: '' },
    },
    IngresssCrypto: { ingress_ca: '', ingress_certificate_cn: '' },
  },
  release_registry: 'quay.io',
  pull_secret: '{"auths":{"quay.io":{"auth":"c2VjcmV0"}}}',
};

/** Every leaf field of a schema, as dotted paths: objects are walked, anything else is a leaf. */
function leaves(schema: z.ZodType, prefix = ''): string[] {
  const inner = schema instanceof z.ZodOptional || schema instanceof z.ZodNullable ? schema.unwrap() : schema;
  if (!(inner instanceof z.ZodObject) || prefix === 'proxy' || prefix === 'additionalTrustBundle') return [prefix];
  return Object.entries(inner.shape as Record<string, z.ZodType>).flatMap(([key, child]) =>
    leaves(child, prefix ? `${prefix}.${key}` : key),
  );
}

describe('the manifest.json field table', () => {
  it('has one row for every SeedReconfiguration field, so none can be silently dropped', () => {
    expect(FIELD_TABLE.map((r) => r.field).sort()).toEqual(leaves(seedReconfigurationSchema).sort());
  });

  it('maps only onto fields the native schema has', () => {
    const native = z.toJSONSchema(siteConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
    for (const row of FIELD_TABLE.filter((r) => r.native?.startsWith('spec.'))) {
      const found = row.native!.split('.').reduce<JsonSchema | undefined>((s, k) => s?.properties?.[k], native);
      expect(found, row.native).toBeDefined();
    }
  });

  it('gives every refused field its reason and what it would take', () => {
    for (const row of FIELD_TABLE.filter((r) => r.use === 'refused'))
      expect(row.note, row.field).toMatch(/^refused: .{20,}; .{10,}/);
  });
});

describe('translateSeedReconfiguration', () => {
  it("takes IBIO's manifest: identity and kubeconfig crypto are taken or checked, the re-signing keys unused", () => {
    const seed = seedReconfigurationSchema.parse(ibioExample);
    const { findings, imageBased } = translateSeedReconfiguration(seed);
    expect(findings).toEqual([]);
    expect(imageBased).toMatchObject({
      clusterID: ibioExample.cluster_id,
      infraID: 'test-sktvm',
      releaseRegistry: 'quay.io',
    });
    expect(imageBased.unused.map((u) => u.field)).toEqual([
      'KubeconfigCryptoRetention.KubeAPICrypto.ServingCrypto.localhost_signer_private_key',
    ]);
  });

  it('names a cluster_id that is no UUID, a key that is no key, and ingress_ca without its CN, never quoting them', () => {
    const seed = seedReconfigurationSchema.parse({
      ...ibioExample,
      cluster_id: 'store-43',
      KubeconfigCryptoRetention: {
        KubeAPICrypto: { ServingCrypto: { loadbalancer_external_signer_private_key: 'hunter2-key' } },
        IngresssCrypto: { ingress_ca: RSA_KEY },
      },
    });
    const { findings } = translateSeedReconfiguration(seed);
    expect(findings.map((f) => f.path)).toEqual([
      'cluster-configuration/manifest.json: $.cluster_id',
      'cluster-configuration/manifest.json: $.KubeconfigCryptoRetention.KubeAPICrypto.ServingCrypto.loadbalancer_external_signer_private_key',
      'cluster-configuration/manifest.json: $.KubeconfigCryptoRetention.IngresssCrypto.ingress_certificate_cn',
    ]);
    expect(JSON.stringify(findings)).not.toMatch(/hunter2|PRIVATE KEY/);
  });

  it('keeps the signers with the subjects their certificates carry', () => {
    const seed = seedReconfigurationSchema.parse({
      ...ibioExample,
      KubeconfigCryptoRetention: {
        KubeAPICrypto: { ServingCrypto: { loadbalancer_external_signer_private_key: RSA_KEY } },
        IngresssCrypto: { ingress_ca: RSA_KEY, ingress_certificate_cn: 'ingress-operator@1764000000' },
      },
    });
    const { imageBased } = translateSeedReconfiguration(seed);
    expect(imageBased.apiSigner?.subject).toEqual({
      commonName: 'kube-apiserver-lb-signer',
      organizationalUnit: 'openshift',
    });
    expect(imageBased.ingressSigner?.subject).toEqual({ commonName: 'ingress-operator@1764000000' });
  });

  it.each([
    ['one node IP', ['192.168.127.10/24'], '192.168.127.10/24'],
    ['dual-stack, IPv6 primary', ['fd69::10/64', '192.168.127.10/24'], ['fd69::10/64', '192.168.127.10/24']],
  ])('maps node_ips onto spec.network.internalIP: %s', (_, nodeIps, internalIP) => {
    const { document, findings } = translateSeedReconfiguration(
      seedReconfigurationSchema.parse({ ...ibioExample, node_ips: nodeIps, machine_networks: [] }),
    );
    expect(findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect((document as { spec: { network: { internalIP?: unknown } } }).spec.network.internalIP).toEqual(internalIP);
  });

  it('refuses a node IP without its prefix length, naming it', () => {
    const { findings } = translateSeedReconfiguration(
      seedReconfigurationSchema.parse({ ...ibioExample, node_ips: ['fd69::10/64', '192.168.127.10'] }),
    );
    expect(findings.map((f) => [f.path, f.message])).toContainEqual([
      'cluster-configuration/manifest.json: $.node_ips[1]',
      'needs its prefix length: the internal IP on br-ex, as the factory pinned it',
    ]);
  });

  it('refuses the image-based upgrade fields by name, with what to use instead', () => {
    const { findings } = translateSeedReconfiguration(
      seedReconfigurationSchema.parse({ ...ibioExample, install_config: 'x' }),
    );
    expect(findings.map((f) => [f.path, f.message.split(';')[0]])).toEqual([
      [
        'cluster-configuration/manifest.json: $.install_config',
        'refused: an image-based upgrade field (the installer never writes it)',
      ],
    ]);
  });

  it('takes the empty structs Go always writes as absent', () => {
    const seed = seedReconfigurationSchema.parse({
      ...ibioExample,
      cluster_id: '',
      infra_id: '',
      kubeadmin_password_hash: '',
      release_registry: '',
      KubeconfigCryptoRetention: { KubeAPICrypto: { ServingCrypto: {}, ClientAuthCrypto: {} }, IngresssCrypto: {} },
      additionalTrustBundle: { userCaBundle: '', proxyConfigmapName: '', proxyConfigmapBundle: '' },
    });
    const { document, findings } = translateSeedReconfiguration(seed);
    expect(findings).toEqual([]);
    expect(document).toMatchObject({
      metadata: { name: 'ostest-extraworker-0' },
      spec: { baseDomain: 'example.com', clusterName: 'test', pullSecret: { auths: { 'quay.io': {} } } },
    });
  });

  it('names api_version and the missing pull secret', () => {
    const { findings } = translateSeedReconfiguration({ api_version: 2, base_domain: 'a.example.com' });
    expect(findings.map((f) => f.path)).toEqual([
      'cluster-configuration/manifest.json: $.api_version',
      'cluster-configuration/manifest.json: $.pull_secret',
    ]);
    expect(findings[0]!.message).toContain('unsupported seed reconfiguration version 2');
  });

  it('never quotes a pull secret that is not JSON', () => {
    const { findings } = translateSeedReconfiguration({
      api_version: 1,
      base_domain: 'a.example.com',
      pull_secret: 'hunter2{',
    });
    expect(findings).toHaveLength(1);
    expect(findings[0]!.message).not.toContain('hunter2');
  });

  it('splits ssh_key into one key per line', () => {
    const { document } = translateSeedReconfiguration({
      api_version: 1,
      base_domain: 'a.example.com',
      pull_secret: '{"auths":{}}',
      ssh_key: 'ssh-ed25519 AAAA a\n\nssh-rsa BBBB b\n',
    });
    expect((document as { spec: { sshAuthorizedKeys: string[] } }).spec.sshAuthorizedKeys).toEqual([
      'ssh-ed25519 AAAA a',
      'ssh-rsa BBBB b',
    ]);
  });
});

const minimal = { api_version: 1, base_domain: 'a.example.com', pull_secret: '{"auths":{}}' };
const specOf = (seed: Record<string, unknown>) => {
  const { document, findings } = translateSeedReconfiguration(seedReconfigurationSchema.parse({ ...minimal, ...seed }));
  return { spec: (document as { spec: Record<string, unknown> }).spec, paths: findings.map((f) => f.path) };
};
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

describe("the site's services from manifest.json", () => {
  it('maps kubeadmin_password_hash, chrony_config, node_labels and proxy onto their native fields', () => {
    const { spec, paths } = specOf({
      kubeadmin_password_hash: '$2a$10$hash',
      chrony_config: 'server ntp.example.com iburst\n',
      node_labels: { 'store.example.com/id': '43' },
      proxy: { httpProxy: 'http://proxy:3128', httpsProxy: '', noProxy: '.example.com' },
    });
    expect(paths).toEqual([]);
    expect(spec).toMatchObject({
      access: { kubeadminPasswordHash: '$2a$10$hash' },
      chronyConfig: 'server ntp.example.com iburst\n',
      nodeLabels: { 'store.example.com/id': '43' },
      proxy: { httpProxy: 'http://proxy:3128', noProxy: '.example.com' },
    });
    expect(spec.proxy).not.toHaveProperty('httpsProxy');
  });

  it.each<[string, Record<string, unknown>, string[] | undefined]>([
    ['the list', { machine_networks: ['10.43.0.0/24', 'fd43::/64'] }, ['10.43.0.0/24', 'fd43::/64']],
    ['the older single field', { machine_network: '10.43.0.0/24' }, ['10.43.0.0/24']],
    ['both, agreeing', { machine_networks: ['10.43.0.0/24'], machine_network: '10.43.0.0/24' }, ['10.43.0.0/24']],
  ])('maps machine networks: %s', (_name, seed, networks) => {
    const { spec, paths } = specOf(seed);
    expect(paths).toEqual([]);
    expect((spec.network as { machineNetworks?: string[] }).machineNetworks).toEqual(networks);
  });

  it('refuses a machine_network that is not one of machine_networks', () => {
    expect(specOf({ machine_networks: ['10.43.0.0/24'], machine_network: '10.9.0.0/24' }).paths).toEqual([
      'cluster-configuration/manifest.json: $.machine_network',
    ]);
  });

  it.each<[string, Record<string, string>, unknown, string[]]>([
    ['the bundle alone', { userCaBundle: PEM }, { caBundle: PEM, proxyTrustedCA: false }, []],
    [
      'the bundle for the proxy too',
      { userCaBundle: PEM, proxyConfigmapName: 'user-ca-bundle', proxyConfigmapBundle: PEM },
      { caBundle: PEM, proxyTrustedCA: true },
      [],
    ],
    [
      'a name without a bundle',
      { userCaBundle: PEM, proxyConfigmapName: 'user-ca-bundle' },
      undefined,
      ['cluster-configuration/manifest.json: $.additionalTrustBundle.proxyConfigmapName'],
    ],
    [
      'a ConfigMap the installer does not make',
      { userCaBundle: PEM, proxyConfigmapName: 'corp-ca', proxyConfigmapBundle: PEM },
      undefined,
      ['cluster-configuration/manifest.json: $.additionalTrustBundle.proxyConfigmapName'],
    ],
    [
      'a proxy bundle other than userCaBundle',
      { userCaBundle: PEM, proxyConfigmapName: 'user-ca-bundle', proxyConfigmapBundle: `${PEM}${PEM}` },
      undefined,
      ['cluster-configuration/manifest.json: $.additionalTrustBundle.proxyConfigmapBundle'],
    ],
  ])('additionalTrustBundle: %s', (_name, bundle, trustBundle, paths) => {
    const out = specOf({ additionalTrustBundle: bundle });
    expect(out.paths).toEqual(paths);
    expect(out.spec.trustBundle).toEqual(trustBundle);
  });

  it('reports a finding on a mapped service field at the manifest field it came from', () => {
    expect(sourceOf('$.spec.trustBundle.caBundle')).toBe(
      'cluster-configuration/manifest.json: $.additionalTrustBundle ($.spec.trustBundle.caBundle)',
    );
    expect(sourceOf('$.spec.network.machineNetworks[0]')).toBe(
      'cluster-configuration/manifest.json: $.machine_networks ($.spec.network.machineNetworks[0])',
    );
  });
});

describe('helpers', () => {
  it.each([
    ['', true],
    [{ a: { b: '' } }, true],
    [[], true],
    [{ a: 'x' }, false],
    [0, false],
  ])('isEmpty(%j) is %s', (value, empty) => expect(isEmpty(value)).toBe(empty));

  it('reports a native finding on the manifest field it came from', () => {
    expect(sourceOf('$.spec.network.nmstate.interfaces[0].ipv4.address[0].ip')).toBe(
      'cluster-configuration/manifest.json: $.raw_nm_state_config ($.spec.network.nmstate.interfaces[0].ipv4.address[0].ip)',
    );
    expect(sourceOf('$.spec.baseDomain')).toBe(
      'cluster-configuration/manifest.json: $.base_domain ($.spec.baseDomain)',
    );
  });

  it('reads both mirror file shapes', () => {
    const entry = { source: 'quay.io/a', mirrors: ['m.example.com/a'] };
    expect(mirrorsFromFile('x', { spec: { imageDigestMirrors: [entry] } }).mirrors).toEqual([entry]);
    expect(mirrorsFromFile('x', [entry]).mirrors).toEqual([entry]);
    expect(mirrorsFromFile('x', { kind: 'Other' }).finding?.path).toBe('x: $');
  });
});
