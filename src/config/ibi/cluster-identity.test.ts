import { describe, expect, it } from 'vitest';
import { infraIdWarning, registryOf } from './cluster-identity.js';

describe('registryOf', () => {
  it.each([
    ['quay.io/openshift-release-dev/ocp-release@sha256:abc', 'quay.io'],
    ['registry.store44.example.com:5000/ocp/release:4.16', 'registry.store44.example.com:5000'],
    ['Quay.IO/x/y', 'quay.io'],
    ['localhost/release', 'localhost'],
    ['library/busybox', 'docker.io'],
    ['busybox', 'docker.io'],
  ])('%s is from %s, as container tools read it', (image, registry) => expect(registryOf(image)).toBe(registry));
});

describe('infraIdWarning', () => {
  it('names both values when they differ, and is silent when they agree or the media has none', () => {
    const warning = infraIdWarning(
      { infraID: 'sno-ab12c', unused: [], given: [] },
      { infrastructureName: 'sno-x7k2p' },
    );
    expect(warning).toContain('infra_id sno-ab12c');
    expect(warning).toContain('infrastructure name sno-x7k2p');
    expect(
      infraIdWarning({ infraID: 'sno-x7k2p', unused: [], given: [] }, { infrastructureName: 'sno-x7k2p' }),
    ).toBeUndefined();
    expect(infraIdWarning({ unused: [], given: [] }, { infrastructureName: 'sno-x7k2p' })).toBeUndefined();
  });
});
