/**
 * examples/ibi-config-media is what the installer writes for the example store, made by the tests'
 * generator (example-media.ts): field for field the shape of freshly generated media, the same
 * values where the installer takes them from its inputs, its own random identity and crypto where
 * the installer generates them, and it loads with every field taken, checked or accepted as unused.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSiteConfig } from '../../src/config/load.js';
import { EXAMPLE_MEDIA, exampleShapedMedia } from './example-media.js';
import type { InstallerOutput } from './installer-media.js';

const MANIFEST = 'cluster-configuration/manifest.json';
const MIRRORS = 'cluster-configuration/manifests/image-digest-mirror-set.json';
/** what the installer generates afresh for each site: its values differ from one generation to the next */
const GENERATED = /^(cluster_id|infra_id|KubeconfigCryptoRetention\.)/;

/** Every leaf of a JSON document by its dotted path, in document order. */
const leaves = (value: unknown, at = ''): [string, unknown][] =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? Object.entries(value).flatMap(([k, v]) => leaves(v, at ? `${at}.${k}` : k))
    : [[at, value]];

let work: string;
let fresh: InstallerOutput;
const example = (file: string) => JSON.parse(readFileSync(path.join(EXAMPLE_MEDIA, file), 'utf8')) as unknown;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'ibi-example-check-'));
  fresh = exampleShapedMedia(work);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the example config media', () => {
  it("has the installer's shape: the generator's fields in its order, its values from the store's inputs", () => {
    const mine = leaves(example(MANIFEST));
    const theirs = leaves(JSON.parse(readFileSync(path.join(fresh.mediaDir, MANIFEST), 'utf8')));
    expect(mine.map(([k]) => k)).toEqual(theirs.map(([k]) => k));
    for (const [[field, value], [, generated]] of mine.map((m, i) => [m, theirs[i]!] as const))
      if (!GENERATED.test(field)) expect(value, field).toEqual(generated);
    expect(example(MIRRORS)).toEqual(JSON.parse(readFileSync(path.join(fresh.mediaDir, MIRRORS), 'utf8')));
  });

  it('carries an identity and kubeconfig crypto, none of it empty', () => {
    const generated = Object.fromEntries(leaves(example(MANIFEST)).filter(([k]) => GENERATED.test(k)));
    expect(Object.keys(generated)).toHaveLength(8);
    for (const [field, value] of Object.entries(generated)) expect(value, field).not.toBe('');
    expect(generated.cluster_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(generated.infra_id).toMatch(/^sno-[a-z0-9]{5}$/);
    const adminCa = new X509Certificate(
      generated['KubeconfigCryptoRetention.KubeAPICrypto.ClientAuthCrypto.admin_ca_certificate'] as string,
    );
    expect(adminCa.ca).toBe(true);
    expect(adminCa.subject).toBe('OU=openshift\nCN=admin-kubeconfig-signer');
  });

  it('loads with nothing refused: identity, admin CA and signers taken, the re-signing keys unused', async () => {
    const loaded = await loadSiteConfig(EXAMPLE_MEDIA, new Date());
    expect(loaded.findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(loaded.site.imageBased).toMatchObject({
      apiSigner: { subject: { commonName: 'kube-apiserver-lb-signer' } },
      ingressSigner: { subject: { commonName: expect.stringMatching(/^ingress-operator@\d+$/) } },
      unused: [{ field: expect.stringMatching(/localhost/) }, { field: expect.stringMatching(/service_network/) }],
    });
    expect(loaded.site.access?.factoryAdminKubeconfig).toBe('revoke');
  });
});
