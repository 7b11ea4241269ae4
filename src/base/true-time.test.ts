import { describe, expect, it } from 'vitest';
import { deferTimeFindings, type Finding } from './findings.js';
import { decideClock, lowerBound, outsideWindow, type ClockInput } from './true-time.js';

const at = (iso: string) => new Date(iso);
const TRUE_NOW = at('2026-11-26T12:00:00Z');
const AHEAD = at('2027-05-26T12:00:00Z');
const BEHIND = at('2026-05-26T12:00:00Z');
const marks = [
  { what: 'agent build', at: at('2026-11-01T00:00:00Z') },
  { what: 'factory seal', at: at('2026-11-20T08:00:00Z') },
  { what: 'site-config signature (signedAt)', at: at('2026-11-25T09:00:00Z') },
];
const bound = lowerBound(marks);
/** the signature expires in a month: valid on the true clock, expired six months ahead */
const signature: Finding = {
  severity: 'error',
  path: 'site-config.sig',
  message: 'the signature',
  window: { notAfter: '2026-12-26T00:00:00.000Z' },
};
/** a site CA issued yesterday: not yet valid six months behind */
const siteCa: Finding = {
  severity: 'error',
  path: '$.spec.access.siteCA.certFile',
  message: 'CN=store-ca is not valid before 2026-11-25T00:00:00.000Z',
  window: { notBefore: '2026-11-25T00:00:00.000Z', notAfter: '2036-11-25T00:00:00.000Z' },
};
const input = (over: Partial<ClockInput>): ClockInput => ({
  now: TRUE_NOW,
  bound,
  sync: 'synchronised',
  waited: false,
  deferred: [],
  ...over,
});

describe('the lower bound for the true time', () => {
  it('is the newest of signature, seal and build', () => expect(bound?.what).toBe('site-config signature (signedAt)'));
  it('is none without marks', () => expect(lowerBound([])).toBeUndefined());
});

describe('windows', () => {
  it.each([
    [TRUE_NOW, undefined],
    [AHEAD, 'expired on 2026-12-26T00:00:00.000Z'],
    [BEHIND, 'not valid before 2026-11-25T00:00:00.000Z'],
  ])('at %s', (now, problem) => {
    const window = { notBefore: '2026-11-25T00:00:00.000Z', notAfter: '2026-12-26T00:00:00.000Z' };
    expect(outsideWindow(window, now)).toBe(problem);
  });
});

describe('admission on an unsynchronised clock', () => {
  it('keeps an error of time alone as a warning and defers it; other errors stay', () => {
    const findings: Finding[] = [siteCa, { severity: 'error', path: '$.spec.baseDomain', message: 'not a DNS name' }];
    const deferred: Finding[] = [];
    deferTimeFindings(findings, deferred);
    expect(deferred).toEqual([siteCa]);
    expect(findings.map((f) => f.severity)).toEqual(['warning', 'error']);
    expect(findings[0]!.message).toMatch(/judged again once it has/);
  });
});

describe('the clock decision', () => {
  it.each<[string, Partial<ClockInput>, string]>([
    ['synchronised, nothing deferred', {}, 'trusted'],
    ['unsynchronised before the wait', { sync: 'unsynchronised', now: AHEAD }, 'wait'],
    [
      'six months ahead, synchronised after the wait: the signature judged valid',
      { deferred: [signature], waited: true },
      'trusted',
    ],
    ['six months behind, synchronised: the CA judged valid', { deferred: [siteCa], waited: true }, 'trusted'],
    ['no NTP, clock plausible: goes on', { sync: 'unsynchronised', waited: true }, 'trusted'],
    ['no chronyd at all, clock plausible', { sync: 'absent' }, 'trusted'],
    ['no NTP, clock before the bound: stops', { sync: 'unsynchronised', waited: true, now: BEHIND }, 'refuse'],
    ['no chronyd, clock before the bound: stops', { sync: 'absent', now: BEHIND }, 'refuse'],
    [
      'no NTP, clock ahead: the signature expired on it',
      { sync: 'unsynchronised', waited: true, now: AHEAD, deferred: [signature] },
      'refuse',
    ],
    ['synchronised, a signature truly expired', { now: at('2027-01-01T00:00:00Z'), deferred: [signature] }, 'refuse'],
  ])('%s', (_name, over, verdict) => expect(decideClock(input(over)).verdict).toBe(verdict));

  it('says what to fix when the clock is known wrong', () => {
    const decision = decideClock(input({ sync: 'unsynchronised', waited: true, now: BEHIND }));
    expect(decision).toEqual({
      verdict: 'refuse',
      reason: expect.stringMatching(
        /clock reads 2026-05-26T12:00:00.000Z, before the site-config signature \(signedAt\) at 2026-11-25T09:00:00.000Z.*spec\.chronyConfig.*timedatectl set-time/,
      ),
    });
  });

  it('names the finding judged again and the clock it was judged on', () => {
    const refused = decideClock(input({ now: at('2027-01-01T00:00:00Z'), deferred: [signature] }));
    expect(refused).toEqual({
      verdict: 'refuse',
      reason:
        'site-config refused, judged again on the clock chronyd synchronised (2027-01-01T00:00:00.000Z): site-config.sig: the signature expired on 2026-12-26T00:00:00.000Z',
    });
    const trusted = decideClock(input({ deferred: [siteCa], waited: true }));
    expect(trusted.verdict === 'trusted' && trusted.notes[1]).toBe(
      '$.spec.access.siteCA.certFile: valid on the clock chronyd synchronised, judged again after the clock sync',
    );
  });
});
