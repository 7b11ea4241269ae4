import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  generateSigningKey,
  keyId,
  readPrivateKey,
  readPublicKey,
  signSiteConfig,
  type TrustAnchor,
  verifySiteConfig,
} from './signature.js';

const factory = generateSigningKey();
const rotated = generateSigningKey();
const stranger = generateSigningKey();
const FILES = [
  { name: 'site-config.yaml', sha256: 'a'.repeat(64) },
  { name: 'network.yaml', sha256: 'b'.repeat(64) },
];
const NOW = new Date('2026-11-22T12:00:00Z');
const anchors: TrustAnchor[] = [
  { name: 'factory.pub', key: readPublicKey(factory.publicPem, 'factory.pub') },
  { name: 'rotated.pub', key: readPublicKey(rotated.publicPem, 'rotated.pub') },
];

const signWith = (pem: string, extra: Partial<Parameters<typeof signSiteConfig>[1]> = {}) =>
  Buffer.from(
    JSON.stringify(
      signSiteConfig(readPrivateKey(pem, 'key'), { site: 'store-0042', files: FILES, now: NOW, ...extra }),
    ),
  );
const check = (document: Buffer | undefined, over: Partial<Parameters<typeof verifySiteConfig>[0]> = {}) =>
  verifySiteConfig({ document, anchors, files: FILES, now: NOW, node: { machineId: 'm-1', serial: 'SN1' }, ...over });
const tamper = (doc: Buffer, edit: (d: { signed: Record<string, unknown>; signature: string }) => void) => {
  const parsed = JSON.parse(doc.toString()) as { signed: Record<string, unknown>; signature: string };
  edit(parsed);
  return Buffer.from(JSON.stringify(parsed));
};

describe('verifySiteConfig', () => {
  it('accepts a folder signed by any of the trusted keys (rotation)', () => {
    expect(check(signWith(factory.privatePem))).toMatchObject({ trusted: true, anchor: 'factory.pub' });
    expect(check(signWith(rotated.privatePem))).toMatchObject({ trusted: true, anchor: 'rotated.pub' });
  });

  it.each([
    [
      'no signature at all',
      () => check(undefined),
      'site-config not signed by a trusted key: the folder has no site-config.sig',
    ],
    [
      'a key the node does not trust',
      () => check(signWith(stranger.privatePem)),
      `signed by key ${stranger.keyId}, which this node does not trust`,
    ],
    ['garbage instead of a signature', () => check(Buffer.from('not json')), 'site-config.sig is not JSON'],
    [
      'a signature document of another shape',
      () => check(Buffer.from('{"apiVersion":"v0"}')),
      'is not a sno-relocate signature',
    ],
    [
      'a manifest edited after signing',
      () =>
        check(
          tamper(
            signWith(factory.privatePem),
            (d) => ((d.signed.files as { sha256: string }[])[1]!.sha256 = 'c'.repeat(64)),
          ),
        ),
      'altered after signing',
    ],
    [
      'an expiry pushed out after signing',
      () =>
        check(
          tamper(
            signWith(factory.privatePem, { notAfter: new Date('2026-11-01T00:00:00Z') }),
            (d) => (d.signed.notAfter = '2030-01-01T00:00:00.000Z'),
          ),
        ),
      'altered after signing',
    ],
    [
      'a file changed after signing',
      () =>
        check(signWith(factory.privatePem), { files: [FILES[0]!, { name: 'network.yaml', sha256: 'd'.repeat(64) }] }),
      'file network.yaml changed after signing',
    ],
    [
      'a file the signature does not cover',
      () =>
        check(signWith(factory.privatePem), {
          files: [...FILES, { name: 'pull-secret.json', sha256: 'e'.repeat(64) }],
        }),
      'file pull-secret.json is not covered by the signature',
    ],
    [
      'a file taken away after signing',
      () => check(signWith(factory.privatePem), { files: [FILES[0]!] }),
      'file network.yaml is covered by the signature but missing',
    ],
    [
      'an expired signature',
      () => check(signWith(factory.privatePem, { notAfter: new Date('2026-11-21T00:00:00Z') })),
      'signature expired on 2026-11-21T00:00:00.000Z',
    ],
    [
      'a stick made for another serial',
      () => check(signWith(factory.privatePem, { node: { serial: 'SN2' } })),
      'made for another node (serial SN2, this node is SN1)',
    ],
    [
      'a stick made for another machine-id',
      () => check(signWith(factory.privatePem, { node: { machineId: 'm-2' } })),
      'made for another node (machine-id m-2, this node is m-1)',
    ],
  ])('refuses %s, saying why', (_what, run, reason) => {
    const verdict = run();
    expect(verdict.trusted).toBe(false);
    expect(verdict.trusted ? '' : verdict.reason).toContain(reason);
  });

  it('accepts a signature that is not yet expired and made for this node', () => {
    expect(
      check(signWith(factory.privatePem, { notAfter: new Date('2026-12-01T00:00:00Z'), node: { serial: 'SN1' } }))
        .trusted,
    ).toBe(true);
  });

  it('ignores files in the folder the site-config does not name', () => {
    expect(check(signWith(factory.privatePem), { files: FILES }).trusted).toBe(true);
  });
});

describe('keys', () => {
  it('names a key by the sha256 of its public key, the same from either half', () => {
    expect(keyId(readPrivateKey(factory.privatePem, 'k'))).toBe(factory.keyId);
    expect(keyId(readPublicKey(factory.publicPem, 'k'))).toBe(factory.keyId);
  });

  it('refuses keys that are not Ed25519, or not keys', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    expect(() => readPrivateKey(rsa, 'old.key')).toThrow('old.key is a rsa key; sno-relocate signs with Ed25519 keys');
    expect(() => readPublicKey('hello', 'x.pub')).toThrow('x.pub is not a PEM public key');
  });

  it('serializes canonically whatever the key order', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 'x' }], e: undefined })).toBe('{"a":[{"c":"x","d":2}],"b":1}');
  });
});
