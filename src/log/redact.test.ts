import { describe, expect, it } from 'vitest';
import { describeAuths, redactSecrets, scrubText } from './redact.js';

const KEY =
  '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----';
const AUTH = Buffer.from('robot:s3cr3t-pa55').toString('base64');

describe('scrubText', () => {
  it.each([
    ['a PEM private key', `key is ${KEY} here`, 'MIIEvQ', 'key is <redacted: private key> here'],
    ['an EC private key cut short', '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB', 'MHcCAQ', '<redacted: private key>'],
    ['a bearer token', 'Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.abc', 'eyJhbG', 'Authorization: Bearer <redacted>'],
    [
      'a docker auth',
      `{"auths":{"r.example.com":{"auth":"${AUTH}"}}}`,
      AUTH,
      '{"auths":{"r.example.com":{"auth":"<redacted>"}}}',
    ],
    [
      "a proxy URL's password",
      '+ spec.httpProxy: "http://store42:pr0xy-pa55@proxy.store42.example.com:3128"',
      'pr0xy-pa55',
      '+ spec.httpProxy: "http://store42:<redacted>@proxy.store42.example.com:3128"',
    ],
    [
      'a kubeadmin bcrypt hash',
      'kubeadmin hash $2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy set',
      'N9qo8uLOickgx2ZMRZoMye',
      'kubeadmin hash <redacted: password hash> set',
    ],
  ])('hides %s', (_what, text, secret, shown) => {
    const out = scrubText(text);
    expect(out).not.toContain(secret);
    expect(out).toBe(shown);
  });

  it('leaves ordinary text alone', () => {
    for (const text of [
      'gateway 10.42.0.1 does not answer ping; Basic checks passed; proxy http://proxy.example.com:3128',
      `pulled quay.io/openshift-release-dev/ocp-release@sha256:${'0123456789abcdef'.repeat(4)}`,
      'read /var/lib/sno-relocate/site-ca/ca.key (mode 0600) from /var/lib/sno-relocate/state.json',
      '$.KubeAPICrypto.ServingCrypto.loadbalancer_external_signer_private_key: not a PEM private key',
      'GET /apis/config.openshift.io/v1/proxies?labelSelector=app%3Dsno-relocate',
    ])
      expect(scrubText(text)).toBe(text);
  });
});

describe('redactSecrets', () => {
  it('replaces secret-named fields at any depth, keeping the shape', () => {
    const input = {
      site: 'store-0042',
      nested: [{ password: 'hunter2', token: 'abc', user: 'core' }],
      pullSecret: { auths: { 'a.example.com': { auth: AUTH }, 'b.example.com': { auth: AUTH } } },
      tls: { 'tls.key': KEY, 'tls.crt': 'CERT' },
      count: 3,
    };
    const out = redactSecrets(input);
    expect(out).toEqual({
      site: 'store-0042',
      nested: [{ password: '<redacted>', token: '<redacted>', user: 'core' }],
      pullSecret: '<redacted: 2 registries>',
      tls: { 'tls.key': '<redacted>', 'tls.crt': 'CERT' },
      count: 3,
    });
    expect(JSON.stringify(out)).not.toContain('hunter2');
    expect(input.nested[0]!.password).toBe('hunter2');
  });

  it('scrubs secrets inside error messages and strings', () => {
    const out = redactSecrets({ err: new Error(`could not parse ${KEY}`), note: `auth "auth":"${AUTH}"` });
    expect(JSON.stringify(out)).not.toContain('MIIEvQ');
    expect(JSON.stringify(out)).not.toContain(AUTH);
  });

  it('hides both data fields of a Secret written whole (an extra manifest)', () => {
    const secret = { kind: 'Secret', data: { token: 'aHVudGVyMg==' }, stringData: { password: 'hunter2' } };
    expect(redactSecrets(secret)).toEqual({ kind: 'Secret', data: '<redacted>', stringData: '<redacted>' });
  });

  it('survives cycles', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    expect(redactSecrets(a)).toEqual({ name: 'a', self: '[circular]' });
  });

  it('counts registries in an auth file', () => {
    expect(describeAuths({ auths: { x: {} } })).toBe('<redacted: 1 registry>');
    expect(describeAuths(null)).toBe('<redacted: 0 registries>');
  });
});
