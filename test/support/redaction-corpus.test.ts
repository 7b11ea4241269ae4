/**
 * Redaction held to the corpus of secrets (test/fixtures/secret-corpus.ts): each secret, in each
 * encoding, planted in journal lines, in files and in objects the support bundle reads; the built
 * executable's `support-bundle` run on that node; and not one secret, nor any 24-byte window of
 * one, found in the archive, while the lines around them are. The logger, which shares the
 * redaction, is held to the same corpus.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { leaks, makePrivateKeys, secretCorpus, secretValues, type CorpusEntry } from '../fixtures/secret-corpus.js';
import { unpackBundle } from '../helpers/bundle.js';
import { runCli } from '../helpers/cli.js';

let work: string;
let keys: Record<string, string>;
let n = 0;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'redaction-corpus-'));
  keys = makePrivateKeys();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const marker = (i: number) => `corpus-line-${i}`;

/**
 * The corpus as `journalctl -o short-iso-precise` prints it: a line per entry under the identifier
 * that wrote it, a message of several lines continued under its first, indented past the prefix.
 */
function journalText(corpus: readonly CorpusEntry[]): string {
  return corpus
    .map((entry, i) => {
      const prefix = `2026-11-26T08:00:${String(i % 60).padStart(2, '0')}.000000+00:00 sno crio[2101]: `;
      const [first, ...rest] = `${marker(i)} ${entry.text}`.split('\n');
      return [prefix + first, ...rest.map((l) => ' '.repeat(prefix.length) + l)].join('\n');
    })
    .join('\n');
}

/** a node whose journal, install file and shipment record hold the corpus, with journalctl on PATH */
function plantedNode(corpus: readonly CorpusEntry[], values: { password: string; oauthToken: string }) {
  const dir = path.join(work, `case-${n++}`);
  const root = path.join(dir, 'node');
  const state = path.join(root, 'var/lib/sno-relocate');
  const bin = path.join(dir, 'bin');
  for (const d of [state, path.join(root, 'etc/sno-relocate'), bin]) mkdirSync(d, { recursive: true });
  writeFileSync(path.join(dir, 'journal.txt'), `${journalText(corpus)}\n`);
  writeFileSync(path.join(bin, 'journalctl'), `#!/bin/sh\ncat ${path.join(dir, 'journal.txt')}\n`);
  chmodSync(path.join(bin, 'journalctl'), 0o755);
  writeFileSync(
    path.join(root, 'etc/sno-relocate/install.env'),
    `${corpus.map((e, i) => `# ${marker(i)}\n${e.text}`).join('\n')}\n`,
  );
  writeFileSync(
    path.join(state, 'shipment.json'),
    JSON.stringify({
      site: 'store-0042',
      notes: corpus.map((e, i) => `${marker(i)} ${e.text}`),
      credentials: { password: values.password, token: values.oauthToken, 'client-key-data': keys['RSA PKCS#1'] },
    }),
  );
  return { dir, root, bin };
}

describe('the support bundle, against the corpus of secrets', () => {
  it('holds no secret of the corpus, nor any 24-byte window of one, and every line around them', () => {
    fc.assert(
      fc.property(secretValues, (values) => {
        const corpus = secretCorpus(values, keys);
        const { dir, root, bin } = plantedNode(corpus, values);
        const out = path.join(dir, 'bundle.tar.gz');
        const r = runCli(['support-bundle', '--root', root, '--out', out], {
          env: { PATH: `${bin}:${process.env.PATH}` },
        });
        expect(r.code, r.stderr).toBe(0);
        const files = unpackBundle(out, path.join(dir, 'unpacked'));
        for (const [name, text] of files) expect(leaks(text, corpus), name).toEqual([]);
        // the lines that carried the secrets are there, in each place they were planted
        for (const name of ['journal/kubelet.txt', 'install/install.env', 'state/shipment.json'])
          for (const i of corpus.keys()) expect(files.get(name), `${marker(i)} in ${name}`).toContain(marker(i));
        rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 6, endOnFailure: true },
    );
  }, 300_000);
});

describe('the logger, against the same corpus', () => {
  it('writes no secret of the corpus in a message, a field, an error or an object, as text or JSON', () => {
    fc.assert(
      fc.property(secretValues, fc.constantFrom('text' as const, 'json' as const), (values, format) => {
        const corpus = secretCorpus(values, keys);
        const lines: string[] = [];
        const log = createLogger({ level: 'debug', journal: false, format, write: (l) => lines.push(l) });
        for (const [i, entry] of corpus.entries()) {
          log.info(`${marker(i)} ${entry.text}`);
          log.warn({ detail: entry.text }, marker(i));
          log.error({ err: new Error(`${marker(i)} ${entry.text}`) }, 'failed');
        }
        log.info(
          { config: { password: values.password, token: values.oauthToken, auths: { 'quay.io': { auth: 'x' } } } },
          'loaded',
        );
        const all = lines.join('');
        expect(leaks(all, corpus)).toEqual([]);
        for (const i of corpus.keys()) expect(all).toContain(marker(i));
      }),
      { numRuns: 40, endOnFailure: true },
    );
  });
});
