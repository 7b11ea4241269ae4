import { describe, expect, it } from 'vitest';
import { CLOCK_SYNC_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { shelfLife } from '../node/shipment.js';
import { planClock, type ClockView } from './clock.js';

const powerOnBy = { date: '2027-03-01T00:00:00.000Z', expiry: '2027-03-15T00:00:00.000Z', certificate: 'etcd peer' };
const view = (now: string, over: Partial<ClockView> = {}): ClockView => ({
  now: new Date(now),
  sync: 'synchronised',
  waited: false,
  bound: { what: 'factory seal', at: new Date('2026-11-20T00:00:00Z') },
  deferred: [],
  passed: [],
  powerOnBy,
  ...over,
});

describe('shelf life on the trusted clock', () => {
  it.each([
    ['2026-12-01T00:00:00Z', 'ok'],
    ['2027-02-20T00:00:00Z', 'warn'],
    ['2027-03-05T00:00:00Z', 'warn'],
    ['2027-03-16T00:00:00Z', 'refuse'],
  ])('at %s: %s', (now, verdict) => expect(shelfLife(new Date(now), powerOnBy).verdict).toBe(verdict));
});

describe('the clock step plan', () => {
  it('waits for chronyd on an unsynchronised clock', () =>
    expect(planClock(view('2026-12-01T00:00:00Z', { sync: 'unsynchronised' })).action).toBe('change'));
  it('shows the power-on-by date once the clock is trusted', () =>
    expect(planClock(view('2026-12-01T00:00:00Z'))).toEqual({
      action: 'noop',
      reason: expect.stringContaining('power on by 2027-03-01 (etcd peer expires 2027-03-15T00:00:00.000Z)') as string,
    }));
  it('refuses past the expiry the date guards, naming it', () =>
    expect(planClock(view('2027-04-01T00:00:00Z'))).toEqual({
      action: 'conflict',
      reason: expect.stringMatching(/etcd peer expired on 2027-03-15.*cannot recover by itself/) as string,
    }));
  it('stops on a clock known wrong that no time server corrected', () =>
    expect(planClock(view('2026-05-01T00:00:00Z', { sync: 'unsynchronised', waited: true })).action).toBe('conflict'));
});

describe('clock decisions', () => {
  const expired = {
    severity: 'error' as const,
    path: '$.spec.trust.ca',
    message: 'the site CA expired on 2026-11-25T00:00:00Z',
    window: { notAfter: '2026-11-25T00:00:00Z' },
  };
  const wait = { waitSeconds: CLOCK_SYNC_TIMEOUT_SECONDS };
  it.each<[string, string, Partial<ClockView>, string, unknown]>([
    ['synchronised, within the shelf life', '2026-12-01T00:00:00Z', {}, 'noop', undefined],
    ['unsynchronised: wait for chronyd', '2026-12-01T00:00:00Z', { sync: 'unsynchronised' }, 'change', wait],
    [
      'unsynchronised and before the seal: wait first, it may be corrected',
      '2026-05-01T00:00:00Z',
      { sync: 'unsynchronised' },
      'change',
      wait,
    ],
    [
      'waited, no server answered, clock plausible',
      '2026-12-01T00:00:00Z',
      { sync: 'unsynchronised', waited: true },
      'noop',
      undefined,
    ],
    ['no chronyd, clock before the seal', '2026-05-01T00:00:00Z', { sync: 'absent' }, 'conflict', undefined],
    [
      'no chronyd, clock plausible',
      '2026-12-01T00:00:00Z',
      { sync: 'absent', powerOnBy: undefined },
      'noop',
      undefined,
    ],
    [
      'a deferred certificate expired on the synchronised clock',
      '2026-12-01T00:00:00Z',
      { deferred: [expired] },
      'conflict',
      undefined,
    ],
    [
      'a passed certificate expired on the synchronised clock',
      '2026-12-01T00:00:00Z',
      { passed: [expired] },
      'conflict',
      undefined,
    ],
    ['past the expiry the power-on-by date guards', '2027-04-01T00:00:00Z', {}, 'conflict', undefined],
  ])('%s', (_, now, over, action, decision) => {
    const plan = planClock(view(now, over));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
