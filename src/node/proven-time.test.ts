import { describe, expect, it } from 'vitest';
import { provenTime, type ProvenTimeInput } from './proven-time.js';

const seal = { what: 'factory seal', at: new Date('2026-06-01T00:00:00Z') };
const build = { what: 'agent build', at: new Date('2026-11-20T00:00:00Z') };
const powerOnBy = {
  date: '2026-11-25T00:00:00.000Z',
  expiry: '2026-12-10T00:00:00.000Z',
  certificate: 'kubelet client certificate',
};
/** a node whose RTC lost its battery on the shelf: its clock reads a day long gone, chronyd yet to sync */
const input = (over: Partial<ProvenTimeInput> = {}): ProvenTimeInput => ({
  now: new Date('2025-01-01T00:00:00Z'),
  trusted: false,
  marks: [seal],
  deferred: [],
  ...over,
});
const signature = (notAfter: string) => ({
  severity: 'error' as const,
  path: 'site-config.sig',
  message: 'the signature',
  window: { notAfter },
});

describe('what the time proves at admission', () => {
  it('refuses a signature that expired before the newest lower bound, whatever the clock reads', () => {
    expect(provenTime(input({ marks: [seal, build], deferred: [signature('2026-10-01T00:00:00Z')] }))).toEqual({
      at: build,
      refusals: ['site-config.sig: the signature expired on 2026-10-01T00:00:00Z'],
    });
  });

  it('proves nothing of a notAfter after the bound, nor of a notBefore: the true time may be later', () => {
    const notYet = { ...signature('2027-01-01T00:00:00Z'), window: { notBefore: '2026-12-01T00:00:00Z' } };
    expect(provenTime(input({ deferred: [signature('2026-07-01T00:00:00Z'), notYet] })).refusals).toEqual([]);
  });

  it('refuses a shipment past the expiry its power-on-by date guards, on the bound', () => {
    const past = { ...powerOnBy, date: '2026-10-15T00:00:00.000Z', expiry: '2026-11-01T00:00:00.000Z' };
    const proven = provenTime(input({ marks: [seal, build], powerOnBy: past }));
    expect(proven.refusals).toEqual([
      expect.stringMatching(
        /^the node stayed off past its power-on-by date 2026-10-15: kubelet client certificate expired on 2026-11-01/,
      ),
    ]);
  });

  it('judges on a clock it may believe when that is later than every bound', () => {
    const past = { ...powerOnBy, expiry: '2026-11-01T00:00:00.000Z' };
    expect(provenTime(input({ trusted: true, now: new Date('2026-11-28T00:00:00Z'), powerOnBy: past }))).toMatchObject({
      at: { what: "node's clock" },
      refusals: [expect.stringContaining('expired on 2026-11-01') as string],
    });
    // an unsynchronised clock proves nothing: the bound alone is judged on
    expect(provenTime(input({ now: new Date('2026-11-28T00:00:00Z'), powerOnBy: past })).refusals).toEqual([]);
  });

  it('warns near the power-on-by date with the date and the days left, at most that many on the bound', () => {
    expect(provenTime(input({ trusted: true, now: new Date('2026-11-20T00:00:00Z'), powerOnBy })).warning).toBe(
      'WARN power on by 2026-11-25 (kubelet client certificate expires 2026-12-10T00:00:00.000Z): 5 day(s) left',
    );
    expect(provenTime(input({ marks: [build], powerOnBy })).warning).toBe(
      'WARN power on by 2026-11-25 (kubelet client certificate expires 2026-12-10T00:00:00.000Z): 5 day(s) left (at most, counted from the agent build at 2026-11-20T00:00:00.000Z: the clock is not synchronised yet)',
    );
    expect(provenTime(input({ powerOnBy })).warning).toBeUndefined();
  });

  it('past the date but before the expiry: warns with the days past and the days to the expiry', () => {
    expect(provenTime(input({ trusted: true, now: new Date('2026-11-28T00:00:00Z'), powerOnBy })).warning).toBe(
      'WARN power on by 2026-11-25 (kubelet client certificate expires 2026-12-10T00:00:00.000Z): PAST by 3 day(s), 12 day(s) before the expiry',
    );
  });

  it('proves nothing without a bound on a clock it may not believe', () => {
    expect(provenTime(input({ marks: [], deferred: [signature('2020-01-01T00:00:00Z')] }))).toEqual({ refusals: [] });
  });
});
