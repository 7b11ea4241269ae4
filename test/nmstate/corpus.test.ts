/**
 * nmstate's own documents (test/fixtures/nmstate-corpus, refreshed by scripts/nmstate-corpus.ts): each
 * is the network of an otherwise valid site-config, and each validates as nmstatectl accepts it.
 */
import { copyFileSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSiteConfig } from '../../src/config/load.js';
import { REPO } from '../helpers/cli.js';

const CORPUS = path.join(REPO, 'test/fixtures/nmstate-corpus');
const documents = ['examples', 'tests'].flatMap((dir) =>
  readdirSync(path.join(CORPUS, dir))
    .sort()
    .map((name) => `${dir}/${name}`),
);

const SITE_CONFIG = `apiVersion: sno-relocate/v1
kind: SiteConfig
metadata:
  name: store-0042
spec:
  baseDomain: store42.example.com
  network:
    nmstateFile: network.yaml
    internalIP: 192.168.127.10/24
`;

describe("nmstate's examples and test states", () => {
  it('holds every example and the sample of the test states', () => {
    expect(documents.filter((d) => d.startsWith('examples/')).length).toBe(47);
    expect(documents.filter((d) => d.startsWith('tests/')).length).toBeGreaterThanOrEqual(30);
  });

  it.each(documents)('%s validates', async (document) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'nmstate-corpus-'));
    writeFileSync(path.join(dir, 'site-config.yaml'), SITE_CONFIG);
    copyFileSync(path.join(CORPUS, document), path.join(dir, 'network.yaml'));
    const { findings } = await loadSiteConfig(dir, new Date());
    expect(findings.filter((f) => f.severity === 'error')).toEqual([]);
  });
});
