import { describe, expect, it } from 'vitest';
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
