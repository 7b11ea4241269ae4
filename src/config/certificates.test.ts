/** The certificate checks, on certificates and keys made by the real openssl, at the time passed in. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Finding } from '../base/findings.js';
import { outsideWindow } from '../base/true-time.js';
import { opensslCa } from '../../test/helpers/openssl.js';
import { caBundleProblem, checkPair, trustBundleProblem } from './certificates.js';

const dir = mkdtempSync(path.join(tmpdir(), 'certificates-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const read = (file: string) => readFileSync(file, 'utf8');
const ca = opensslCa(dir, 'store-ca');
const other = opensslCa(dir, 'other-ca');
const leaf = path.join(dir, 'leaf.crt');
execFileSync('openssl', [
  'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '30',
  '-subj', '/CN=api.store', '-keyout', path.join(dir, 'leaf.key'), '-out', leaf, '-addext', 'basicConstraints=critical,CA:FALSE',
], { stdio: 'pipe' }); // prettier-ignore
const now = new Date();
const inAYear = new Date(now.getTime() + 400 * 86_400_000);
/** a clock months behind, before the CAs were made */
const monthsAgo = new Date(now.getTime() - 180 * 86_400_000);

describe('checkPair', () => {
  const check = (certPem: string, keyPem: string, at = now) => {
    const findings: Finding[] = [];
    const pair = checkPair(at, { certPem, keyPem }, '$.cert', '$.key', findings);
    return { pair, findings };
  };

  it('accepts a certificate with its own key', () => {
    expect(check(read(ca.crt), read(ca.key))).toEqual({
      pair: { certPem: read(ca.crt), keyPem: read(ca.key) },
      findings: [],
    });
  });

  it.each([
    [
      'a key of another certificate',
      () => [read(ca.crt), read(other.key)],
      '$.key',
      'the private key does not belong to CN=store-ca, nor to any certificate of the file: give the key of CN=store-ca',
    ],
    ['a key that is not PEM', () => [read(ca.crt), 'not a key'], '$.key', 'not a PEM private key'],
    ['a certificate that is not PEM', () => ['not a certificate', read(ca.key)], '$.cert', 'not a PEM certificate'],
  ])('refuses %s, naming the field and never the key', (_name, pems, at, message) => {
    const [certPem, keyPem] = pems();
    expect(check(certPem!, keyPem!)).toEqual({ pair: undefined, findings: [{ severity: 'error', path: at, message }] });
  });

  it('names a certificate expired at the time passed in', () => {
    const { findings } = check(read(ca.crt), read(ca.key), inAYear);
    expect(findings).toEqual([
      {
        severity: 'error',
        path: '$.cert',
        message: expect.stringMatching(/^certificate expired on /) as string,
        // the clock's call: judged again on a synchronised clock when admission defers it
        window: { notBefore: expect.any(String) as string, notAfter: expect.any(String) as string },
      },
    ]);
  });

  it('names a certificate not yet valid at the time passed in, as a clock months behind sees it', () => {
    const { findings } = check(read(ca.crt), read(ca.key), monthsAgo);
    expect(findings).toEqual([
      {
        severity: 'error',
        path: '$.cert',
        message: expect.stringMatching(/^certificate not valid before /) as string,
        window: { notBefore: expect.any(String) as string, notAfter: expect.any(String) as string },
      },
    ]);
  });
});

describe('caBundleProblem', () => {
  it.each([
    ['CA certificates valid now', () => read(ca.crt) + read(other.crt), now, undefined],
    [
      'a certificate that is no CA',
      () => read(leaf),
      now,
      'CN=api.store is not a CA certificate (no basicConstraints CA:TRUE): give the CA that issues the certificates, not a certificate it issued',
    ],
    ['a CA expired at the time passed in', () => read(ca.crt), inAYear, /^CN=store-ca expired on /],
    ['a CA not yet valid at the time passed in', () => read(ca.crt), monthsAgo, /^CN=store-ca not valid before /],
    ['text that is not PEM', () => 'just text', now, 'not PEM certificates'],
  ])('%s', (_name, pem, at, problem) => {
    const found = caBundleProblem(at, pem());
    if (problem instanceof RegExp) {
      expect(found?.message).toMatch(problem);
      // an expiry is the clock's call: the finding carries the window it can be judged again on
      expect(outsideWindow(found!.window!, at)).toBeDefined();
      expect(outsideWindow(found!.window!, now)).toBeUndefined();
    } else expect(found?.message).toBe(problem);
  });
});

describe('trustBundleProblem', () => {
  it('accepts certificates only', () => expect(trustBundleProblem(read(ca.crt))).toBeUndefined());

  it('refuses a key pasted into the bundle, without quoting it', () => {
    const problem = trustBundleProblem(read(ca.crt) + read(ca.key));
    expect(problem).toBe('holds a PRIVATE KEY block: a trust bundle holds certificates only');
  });

  it('refuses text that is not PEM', () => expect(trustBundleProblem('just text')).toBe('not PEM certificates'));
});
