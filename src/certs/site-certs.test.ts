import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRootFs } from '../ports/fs.js';
import { ensureSiteCa, issueServing, loadSiteCa, servingProblem } from './site-certs.js';
import { certificatesIn } from '../base/pem.js';

const root = mkdtempSync(path.join(tmpdir(), 'site-certs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const fs = createRootFs(root);
const now = new Date('2026-06-01T00:00:00Z');

describe('site CA', () => {
  it('is made once, its key 0600, and kept for the next run', async () => {
    expect(await loadSiteCa(fs, '/state', now)).toBeUndefined();
    const ca = await ensureSiteCa(fs, '/state', 'store-0042', now);
    expect(statSync(path.join(root, 'state/site-ca/ca.key')).mode & 0o777).toBe(0o600);
    expect(ca.cert.ca).toBe(true);
    expect(ca.cert.subject).toContain('store-0042');
    const again = await ensureSiteCa(fs, '/state', 'store-0042', now);
    expect(again.certPem).toBe(ca.certPem);
  });

  it('is replaced when it is about to expire', async () => {
    const late = new Date(now.getTime() + 3640 * 86_400_000);
    expect(await loadSiteCa(fs, '/state', late)).toBeUndefined();
  });
});

describe('serving certificates', () => {
  it('name their hosts, chain to the CA (a root, not served with them), and are valid from before now', async () => {
    const ca = await ensureSiteCa(fs, '/state', 'store-0042', now);
    const pair = await issueServing(['*.apps.sno.example.com'], ca, now);
    const [leaf, ...chain] = certificatesIn(pair.certPem);
    expect(chain).toEqual([]);
    expect(leaf!.subjectAltName).toBe('DNS:*.apps.sno.example.com');
    expect(leaf!.checkHost('console-openshift-console.apps.sno.example.com')).toBe('*.apps.sno.example.com');
    expect(leaf!.checkIssued(ca.cert)).toBe(true);
    expect(leaf!.verify(ca.cert.publicKey)).toBe(true);
    expect(new Date(leaf!.validFrom).getTime()).toBeLessThan(now.getTime());
    expect(servingProblem(pair, ['*.apps.sno.example.com'], ca, now)).toBeUndefined();
  });

  it.each([
    [
      'another name',
      (p: { certPem: string; keyPem: string }) => p,
      ['api.sno.example.com'],
      /does not name api.sno.example.com/,
    ],
    [
      'a key of another certificate',
      (p: { certPem: string; keyPem: string }, other: { keyPem: string }) => ({ ...p, keyPem: other.keyPem }),
      ['a.example.com'],
      /key does not match/,
    ],
    ['garbage', () => ({ certPem: 'x', keyPem: 'y' }), ['a.example.com'], /cannot be read/],
  ])('finds %s', async (_, mutate, names, why) => {
    const ca = await ensureSiteCa(fs, '/state', 'store-0042', now);
    const pair = await issueServing(['a.example.com'], ca, now);
    const other = await issueServing(['b.example.com'], ca, now);
    expect(servingProblem(mutate(pair, other), names, ca, now)).toMatch(why);
  });

  it('finds a certificate from another CA and one about to expire', async () => {
    const ca = await ensureSiteCa(fs, '/state', 'store-0042', now);
    const otherCa = await ensureSiteCa(
      createRootFs(mkdtempSync(path.join(root, 'other-'))),
      '/state',
      'elsewhere',
      now,
    );
    const foreign = await issueServing(['a.example.com'], otherCa, now);
    expect(servingProblem(foreign, ['a.example.com'], ca, now)).toMatch(/issuer name or key identifier does not match/);
    const pair = await issueServing(['a.example.com'], ca, now);
    expect(servingProblem(pair, ['a.example.com'], ca, new Date(now.getTime() + 800 * 86_400_000))).toMatch(
      /expires within 30 days/,
    );
    expect(servingProblem(pair, ['a.example.com'], undefined, now)).toBe('the site CA that signed it is gone');
    expect(new X509Certificate(pair.certPem).publicKey.asymmetricKeyType).toBe('ec');
  });
});
