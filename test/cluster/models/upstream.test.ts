/**
 * The models' own implementations of what the agent also computes, and the agent's, against
 * vectors that upstream's code produced (the Go programs in upstream/, run with the Go toolchain).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_HASH_ANNOTATION, configMapHash } from '../../../src/kube/openshift-apiserver.js';
import { configMapHashAnnotation, getConfigMapHash } from './resource-hash.js';

const fixture = <T>(name: string) =>
  JSON.parse(readFileSync(new URL(`upstream/${name}`, import.meta.url), 'utf8')) as T;

describe("library-go's GetConfigMapHash (upstream/configmap-hash.go)", () => {
  const vectors = fixture<{ data: Record<string, string>; hash: string }[]>('configmap-hash.json');

  it.each(vectors.map((v) => [Object.keys(v.data).join(',') || 'no keys', v] as const))(
    'the model and the agent hash %s as Go does',
    (_, v) => {
      expect(getConfigMapHash(v.data)).toBe(v.hash);
      expect(configMapHash(v.data)).toBe(v.hash);
    },
  );

  it('annotates the openshift-apiserver template under the key the agent reads', () => {
    expect(configMapHashAnnotation('openshift-apiserver', 'config')).toBe(CONFIG_HASH_ANNOTATION);
  });
});
