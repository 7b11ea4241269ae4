/**
 * A CA that looks valid only because the node's clock is off passes admission on that clock, and
 * is caught when the clock step judges every certificate again on the synchronised clock, in both
 * directions: an RSA root made by `openssl ca` that expired four months ago, on a clock six months
 * behind; one not valid until two months from now, on a clock six months ahead. Each with an RSA
 * issuing CA under it, as the site's PKI makes them.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decideClock } from '../../src/base/true-time.js';
import { loadSiteConfig } from '../../src/config/load.js';
import { timeJudgments } from '../../src/config/time-judgments.js';
import { writeSiteFolder } from '../node/cli.js';
import { datedCa, intermediateCa } from './openssl-cas.js';

const work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-clock-judgments-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const DAY_MS = 86_400_000;
const stamp = (days: number) => new Date(Date.now() + days * DAY_MS).toISOString().replace(/[-:T]|\.\d+/g, '');

describe('certificates admission passed on a wrong clock, judged again on the synchronised one', () => {
  it.each([
    ['six months behind: a root that expired four months ago', -182, -500, -120, /expired on /],
    ['six months ahead: a root not valid for two more months', 182, 60, 700, /not valid before /],
  ] as const)('%s', async (label, offsetDays, fromDays, toDays, problem) => {
    const dir = path.join(work, label.replace(/\W+/g, '-'));
    const root = datedCa(dir, 'store-root', stamp(fromDays), stamp(toDays));
    const issuing = intermediateCa(dir, 'store-issuing', 'rsa2048', root);
    const folder = writeSiteFolder(
      path.join(dir, 'site'),
      'store-0042',
      {
        baseDomain: 'store42.example.com',
        hostname: 'sno-factory',
        network: { nmstate: { interfaces: [] }, internalIP: '192.168.127.10/24' },
        access: { clientCAFile: 'client-ca.crt', siteCA: { certFile: 'site-ca.crt', keyFile: 'site-ca.key' } },
      },
      {
        'client-ca.crt': readFileSync(root.crt, 'utf8'),
        'site-ca.crt': readFileSync(issuing.crt, 'utf8'),
        'site-ca.key': readFileSync(issuing.key, 'utf8'),
      },
    );
    // on the node's RTC, off by six months, the root passes; the issuing CA (made today, a year
    // long) may look outside its dates there and is deferred, and is valid on the true clock
    const wrong = new Date(Date.now() + offsetDays * DAY_MS);
    const loaded = await loadSiteConfig(folder, wrong, true);
    expect(loaded.deferred!.filter((f) => /store-root/.test(f.message))).toEqual([]);
    const synchronised = { now: new Date(), bound: undefined, sync: 'synchronised', waited: true } as const;
    // what admission deferred alone says nothing against the root
    expect(decideClock({ ...synchronised, deferred: loaded.deferred! }).verdict).toBe('trusted');
    const judged = decideClock({ ...synchronised, deferred: loaded.deferred!, passed: timeJudgments(loaded.site) });
    expect(judged.verdict).toBe('refuse');
    const reason = judged.verdict === 'refuse' ? judged.reason : '';
    expect(reason).toMatch(/^site-config refused, judged again on the clock chronyd synchronised/);
    for (const field of ['$.spec.access.clientCAFile', '$.spec.access.siteCA.certFile'])
      expect(reason).toMatch(new RegExp(`${field.replace(/[$.]/g, '\\$&')}: CN=store-root ${problem.source}`));
  });
});
