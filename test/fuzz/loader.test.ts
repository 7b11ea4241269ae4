/**
 * Hostile input at scale: at least 10,000 generated site-config folders per run. The loader and
 * validation either accept a folder or refuse it with a configuration error (exit 2) that names
 * what is wrong; nothing else (a TypeError, a stack overflow, a hang) ever comes out. Most cases run
 * in process; a share goes through the built executable against a root that must not change; and
 * generated signature files go through verification, which refuses them without throwing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSiteConfig } from '../../src/config/load.js';
import { ConfigError, exitCodeOf } from '../../src/base/errors.js';
import { generateSigningKey, readPublicKey, verifySiteConfig } from '../../src/trust/signature.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { runCli } from '../helpers/cli.js';
import { snapshotTree } from '../helpers/tree.js';
import { documentMutation, folderMutation, layFolder, textMutation } from './mutations.js';
import yaml from 'js-yaml';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
let work: string;
let n = 0;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'fuzz-'));
  console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} repeats this run)`);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** loads a folder: 'ok', 'invalid' (exit 2 with a finding), or throws what should never happen */
async function outcome(folder: Parameters<typeof layFolder>[1]): Promise<'ok' | 'invalid'> {
  const dir = path.join(work, `case-${n++}`);
  layFolder(dir, folder);
  try {
    await loadSiteConfig(dir, new Date());
    return 'ok';
  } catch (err) {
    if (err instanceof ConfigError && exitCodeOf(err) === 2 && err.message.length > 0) return 'invalid';
    throw err;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('hostile site-configs', () => {
  const plainFolder = (doc: unknown) => ({
    document: Buffer.from(yaml.dump(doc, { noRefs: true, lineWidth: -1 })),
    files: {},
    links: {},
  });

  it('documents with a part replaced, removed or added: accepted or refused with exit 2 (4,000 cases)', async () => {
    const seen = { ok: 0, invalid: 0 };
    await fc.assert(
      fc.asyncProperty(documentMutation, async (doc) => void seen[await outcome(plainFolder(doc))]++),
      { numRuns: 4000, seed: SEED },
    );
    expect(seen.invalid).toBeGreaterThan(0);
  }, 300_000);

  it('YAML text with features spliced in, cut, duplicated or garbled (3,000 cases)', async () => {
    await fc.assert(
      fc.asyncProperty(textMutation, async (document) => void (await outcome({ document, files: {}, links: {} }))),
      { numRuns: 3000, seed: SEED + 1 },
    );
  }, 300_000);

  it('folders whose named files escape, are links, are missing or are garbage (2,500 cases)', async () => {
    await fc.assert(
      fc.asyncProperty(folderMutation, async (folder) => void (await outcome(folder))),
      { numRuns: 2500, seed: SEED + 2 },
    );
  }, 300_000);

  it('signature files made of anything are refused, never thrown on (1,000 cases)', () => {
    const anchor = { name: 'factory.pub', key: readPublicKey(generateSigningKey().publicPem, 'factory.pub') };
    const files = [{ name: 'site-config.yaml', sha256: 'a'.repeat(64) }];
    const signatureLike = fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
      fc.anything().map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
      fc
        .record({
          apiVersion: fc.constant('sno-relocate/v1'),
          kind: fc.constant('SiteConfigSignature'),
          signed: fc.anything(),
          signature: fc.base64String(),
        })
        .map((v) => Buffer.from(JSON.stringify(v))),
    );
    fc.assert(
      fc.property(signatureLike, (document) => {
        expect(verifySiteConfig({ document, anchors: [anchor], files, now: new Date(), node: {} }).trusted).toBe(false);
      }),
      { numRuns: 1000, seed: SEED + 3 },
    );
  });

  it('through the executable, validate and plan exit 0 or 2 and change nothing under the root (30 folders, 60 runs)', () => {
    const root = path.join(work, 'root');
    layFactoryNode(root);
    const before = snapshotTree(root);
    fc.assert(
      fc.property(folderMutation, (folder) => {
        const dir = path.join(work, `cli-${n++}`);
        layFolder(dir, folder);
        for (const args of [
          ['validate', dir],
          ['plan', dir, '--only', 'ssh-keys,hostname'],
        ]) {
          const result = runCli([...args, '--root', root], { timeoutMs: 20_000 });
          expect([0, 2], `${args.join(' ')}: ${result.stderr}`).toContain(result.code);
          expect(result.stderr).not.toMatch(/TypeError|RangeError|at .*\.js:\d+/);
        }
        rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 30, seed: SEED + 4 },
    );
    expect(snapshotTree(root)).toEqual(before);
  }, 300_000);
});
