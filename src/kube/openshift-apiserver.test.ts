import { describe, expect, it } from 'vitest';
import { configMapHash } from './openshift-apiserver.js';

describe('configMapHash', () => {
  // the expected values were printed by Go's encoding/json and hash/fnv, as library-go computes them
  it('is library-go GetConfigMapHash: FNV-1 32 over json.Encoder output, URL-safe base64', () => {
    expect(configMapHash({ 'config.yaml': '{"routingConfig":{"subdomain":"apps.x"}}' })).toBe('V20gag==');
  });

  it('sorts keys and escapes HTML characters and line separators as Go does', () => {
    expect(configMapHash({ b: '<a&b>', a: 'x\u2028y' })).toBe('mujdJg==');
  });
});
