import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { siteConfigSchema } from '../v1/schema.js';
import {
  FIELD_TABLE,
  isEmpty,
  mirrorsFromFile,
  seedReconfigurationSchema,
  sourceOf,
  translateSeedReconfiguration,
} from './seed-reconfiguration.js';

interface JsonSchema {
  properties?: Record<string, JsonSchema>;
}

/** IBIO's own test manifest (internal/installer/installer_test.go, secretSeedReconfig), keys shortened. */
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

describe('the manifest.json field table', () => {
  it('has one row for every SeedReconfiguration field, so none can be silently dropped', () => {
    expect(FIELD_TABLE.map((r) => r.field).sort()).toEqual(Object.keys(seedReconfigurationSchema.shape).sort());
  });

  it('maps only onto fields the native schema has', () => {
    const native = z.toJSONSchema(siteConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
    for (const row of FIELD_TABLE.filter((r) => r.native)) {
      const found = row.native!.split('.').reduce<JsonSchema | undefined>((s, k) => s?.properties?.[k], native);
      expect(found, row.native).toBeDefined();
    }
  });

  it('gives every refused field its reason', () => {
    for (const row of FIELD_TABLE.filter((r) => !r.native && r.field !== 'api_version'))
      expect(row.note, row.field).toMatch(/^refused: .{20,}/);
  });
});

describe('translateSeedReconfiguration', () => {
  it("refuses IBIO's manifest by the leaf that carries a signer key, and every other identity field by name", () => {
    const seed = seedReconfigurationSchema.parse(ibioExample);
    const paths = translateSeedReconfiguration(seed).findings.map((f) => f.path);
    expect(paths).toContain(
      'cluster-configuration/manifest.json: $.KubeconfigCryptoRetention.KubeAPICrypto.ServingCrypto.localhost_signer_private_key',
    );
    for (const field of ['cluster_id', 'infra_id', 'kubeadmin_password_hash', 'release_registry'])
      expect(paths).toContain(`cluster-configuration/manifest.json: $.${field}`);
    expect(paths).not.toContain('cluster-configuration/manifest.json: $.hostname');
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
