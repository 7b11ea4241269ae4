import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log/logger.js';
import type { Clock } from '../ports/clock.js';
import { describeFailure, isTransient, withRetry } from './retry.js';

const api = (code: number, body: unknown = '') => new ApiException(code, 'failed', body, {});
const socket = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:6443`), { code });

function fakeClock(): Clock & { waits: number[] } {
  let t = 0;
  const waits: number[] = [];
  return { waits, now: () => new Date(t), monotonic: () => t, sleep: async (ms) => void (waits.push(ms), (t += ms)) };
}
const quiet = createLogger({ format: 'json', journal: false, write: () => undefined });

describe('isTransient', () => {
  it.each([
    [api(500), true],
    [api(503), true],
    [api(429), true],
    [api(504), true],
    [socket('ECONNREFUSED'), true],
    [socket('ECONNRESET'), true],
    [new Error('socket hang up'), true],
    [api(409), false],
    [api(404), false],
    [api(403), false],
    [api(422), false],
    [new Error('bad input'), false],
  ])('%s -> %s', (err, want) => {
    expect(isTransient(err)).toBe(want);
  });
});

describe('withRetry', () => {
  it('retries transient failures with growing waits, then returns', async () => {
    const clock = fakeClock();
    let calls = 0;
    const value = await withRetry(
      clock,
      quiet,
      'read',
      async () => {
        calls += 1;
        if (calls < 4) throw calls % 2 ? api(503) : socket('ECONNREFUSED');
        return 'ok';
      },
      { budgetMs: 10_000, firstDelayMs: 100, maxDelayMs: 300 },
    );
    expect(value).toBe('ok');
    expect(clock.waits).toEqual([100, 200, 300]);
  });

  it('gives up when its budget is spent, throwing the last failure', async () => {
    const clock = fakeClock();
    await expect(
      withRetry(clock, quiet, 'read', () => Promise.reject(api(503)), {
        budgetMs: 1_000,
        firstDelayMs: 100,
        maxDelayMs: 400,
      }),
    ).rejects.toMatchObject({ code: 503 });
    expect(clock.waits.reduce((a, b) => a + b, 0)).toBe(1_000);
  });

  it('does not retry an answer', async () => {
    const clock = fakeClock();
    await expect(withRetry(clock, quiet, 'read', () => Promise.reject(api(409)))).rejects.toMatchObject({ code: 409 });
    expect(clock.waits).toEqual([]);
  });
});

describe('describeFailure', () => {
  it("gives the API's own message", () => {
    expect(describeFailure(api(409, JSON.stringify({ message: 'the object has been modified' })))).toBe(
      'HTTP 409: the object has been modified',
    );
    expect(describeFailure(api(500, { message: 'etcdserver: request timed out' }))).toBe(
      'HTTP 500: etcdserver: request timed out',
    );
    expect(describeFailure(socket('ECONNREFUSED'))).toBe('connect ECONNREFUSED 127.0.0.1:6443');
  });
});
