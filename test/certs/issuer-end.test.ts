/**
 * Serving certificates never outlive their issuer: under a site CA (a root made by `openssl ca`
 * with its dates, an issuing CA under it; RSA, or ECDSA P-384 and P-256) that ends in 60 days, the
 * certificate the domain step issues ends with it, the console is warned, and a rerun does not
 * issue it again for ending soon; under a CA of five years the usual 825 days, without a warning.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { certificatesIn } from '../../src/base/pem.js';
import { issueServing, servingProblem, servingWindow, type SiteCa } from '../../src/certs/site-certs.js';
import { parseKey } from '../../src/certs/key-types.js';
import { datedCa, intermediateCa, type OpensslCa } from './openssl-cas.js';

const work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-issuer-end-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const DAY_MS = 86_400_000;
const NAMES = ['api.sno.store42.example.com'];
const stamp = (days: number) => new Date(Date.now() + days * DAY_MS).toISOString().replace(/[-:T]|\.\d+/g, '');

function siteCa(made: OpensslCa): SiteCa {
  const certPem = readFileSync(made.crt, 'utf8');
  const [cert, ...chain] = certificatesIn(certPem);
  return { cert: cert!, chain, key: parseKey(readFileSync(made.key, 'utf8')), certPem };
}

describe('serving certificates end with their issuer', () => {
  it.each([
    ['RSA', 'rsa2048', 'rsa2048'],
    ['ECDSA (P-384 root, P-256 issuing CA)', 'p384', 'p256'],
  ] as const)(
    '%s: under a root that ends in 60 days: capped at its end, warned, and not issued again on a rerun',
    async (family, rootKind, issuingKind) => {
      const dir = path.join(work, `short-${rootKind}`);
      const root = datedCa(dir, 'short-root', stamp(-300), stamp(60), rootKind);
      // the issuing CA itself outlives the root (openssl lets it): the root's end still bounds the chain
      const ca = siteCa(intermediateCa(dir, 'short-issuing', issuingKind, root));
      expect(ca.key.asymmetricKeyType, family).toBe(family === 'RSA' ? 'rsa' : 'ec');
      const now = new Date();
      const pair = await issueServing(NAMES, ca, now);
      const leaf = certificatesIn(pair.certPem)[0]!;
      const rootEnd = certificatesIn(readFileSync(root.crt, 'utf8'))[0]!.validTo;
      expect(Date.parse(leaf.validTo)).toBe(Date.parse(rootEnd));
      expect(servingWindow(ca, now).warning).toBe(
        `CN=short-root expires on ${new Date(rootEnd).toISOString()}, in 59 days: the serving certificates it signs end then too; renew the site's CA and run the relocation again before then`,
      );
      // as long as a new one would be: the domain step's rerun leaves it
      expect(servingProblem(pair, NAMES, ca, now)).toBeUndefined();
      expect(servingProblem(pair, NAMES, ca, new Date(now.getTime() + 45 * DAY_MS))).toBeUndefined();
    },
  );

  it('under a CA of five years: 825 days, no warning', async () => {
    const ca = siteCa(datedCa(path.join(work, 'long'), 'long-root', stamp(-1), stamp(5 * 365)));
    const now = new Date();
    const leaf = certificatesIn((await issueServing(NAMES, ca, now)).certPem)[0]!;
    expect(Math.round((Date.parse(leaf.validTo) - now.getTime()) / DAY_MS)).toBe(825);
    expect(servingWindow(ca, now).warning).toBeUndefined();
  });
});
