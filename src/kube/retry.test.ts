import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log/logger.js';
import type { Clock } from '../ports/clock.js';
import { createRetry, describeFailure, isNotFound, isTransient, isUnserved, OutageBudgetError } from './retry.js';

const api = (code: number, body: unknown = '') => new ApiException(code, 'failed', body, {});
const socket = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:6443`), { code });
/** what kube-apiserver answers for a Route that does not exist (apimachinery errors.NewNotFound) */
const missingRoute = api(
  404,
  JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message: 'routes.route.openshift.io "app-52" not found',
    reason: 'NotFound',
    details: { name: 'app-52', group: 'route.openshift.io', kind: 'routes' },
    code: 404,
  }),
);
/** a path no handler serves (yet): net/http's NotFound, the server's last delegate */
const barePath = api(404, '404 page not found\n');
/** a group version served without the resource asked for: the whole resource path is missing */
const wholePath = api(
  404,
  JSON.stringify({
    kind: 'Status',
    status: 'Failure',
    message: 'the server could not find the requested resource',
    reason: 'NotFound',
    details: {},
    code: 404,
  }),
);

function fakeClock(): Clock & { waits: number[] } {
  let t = 0;
  const waits: number[] = [];
  return { waits, now: () => new Date(t), monotonic: () => t, sleep: async (ms) => void (waits.push(ms), (t += ms)) };
}
function memoryLog() {
  const lines: { level: number; msg: string; event?: string }[] = [];
  const log = createLogger({
    format: 'json',
    level: 'debug',
    journal: false,
    write: (l) => void lines.push(JSON.parse(l) as (typeof lines)[number]),
  });
  return { log, lines, journal: () => lines.filter((l) => l.level >= 30).map((l) => l.msg) };
}

describe('isTransient', () => {
  it.each([
    [api(500), true],
    [api(503), true],
    [api(429), true],
    [api(504), true],
    [socket('ECONNREFUSED'), true],
    [socket('ECONNRESET'), true],
    [new Error('socket hang up'), true],
    [barePath, true],
    [wholePath, true],
    [missingRoute, false],
    [api(409), false],
    [api(403), false],
    [api(422), false],
    [new Error('bad input'), false],
    [new Error('cannot discover route.openshift.io/v1', { cause: api(503) }), true],
  ])('%s -> %s', (err, want) => {
    expect(isTransient(err)).toBe(want);
  });
});

describe('a missing object told apart from a path not served yet', () => {
  it('takes a 404 with a NotFound Status naming the object as the object missing', () => {
    expect(isNotFound(missingRoute)).toBe(true);
    expect(isUnserved(missingRoute)).toBe(false);
  });
  it('takes a bare 404, and a 404 for the whole resource path, as not served yet', () => {
    for (const err of [barePath, wholePath, api(404, { kind: 'Status', reason: 'NotFound', details: {} })]) {
      expect(isNotFound(err)).toBe(false);
      expect(isUnserved(err)).toBe(true);
    }
    expect(describeFailure(barePath)).toBe('HTTP 404: 404 page not found (the path is not served yet)');
  });
});

describe('createRetry', () => {
  const policy = { budgetMs: 10_000, firstDelayMs: 100, maxDelayMs: 300 };

  it('retries through an outage with growing waits; the journal shows its start and its end, once each', async () => {
    const clock = fakeClock();
    const { log, lines, journal } = memoryLog();
    let back = 0;
    const retry = createRetry(clock, log, policy, () => (back += 1));
    let calls = 0;
    const value = await retry('patch Route shop/app-52', async () => {
      calls += 1;
      if (calls < 6) throw [api(503), socket('ECONNREFUSED'), barePath][calls % 3];
      return 'ok';
    });
    expect(value).toBe('ok');
    expect(clock.waits).toEqual([100, 200, 300, 300, 300]);
    expect(journal()).toEqual([
      'the API is away (connect ECONNREFUSED 127.0.0.1:6443) at patch Route shop/app-52: retrying for up to 10 s',
      'the API answers again after 1 s',
    ]);
    expect(lines.filter((l) => l.msg.endsWith('transient failure, retrying'))).toHaveLength(5);
    expect(back).toBe(1);
  });

  it('keeps one outage open while any call waits in it, however many calls meet it', async () => {
    const clock = fakeClock();
    const { log, journal } = memoryLog();
    const retry = createRetry(clock, log, policy);
    let down = true;
    const calls = Array.from({ length: 8 }, (_, i) =>
      retry(`patch Route shop/app-${i}`, async () => {
        if (down) throw api(503, 'service unavailable');
        return i;
      }),
    );
    // every call has failed once and waits its first 100 ms (the fake clock adds them up); the API comes back
    await Promise.resolve();
    down = false;
    expect(await Promise.all(calls)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(journal()).toEqual([
      'the API is away (HTTP 503: service unavailable) at patch Route shop/app-0: retrying for up to 10 s',
      'the API answers again after 1 s',
    ]);
  });

  it('gives up after the budget, naming the last failure, and says so once', async () => {
    const clock = fakeClock();
    const { log, journal } = memoryLog();
    const failure = await retry(createRetry(clock, log, { ...policy, budgetMs: 1_000 }));
    expect(failure).toBeInstanceOf(OutageBudgetError);
    expect((failure as Error).message).toBe(
      'the API was away longer than the outage budget of 1 s: HTTP 404: 404 page not found (the path is not served yet)',
    );
    expect(clock.waits.reduce((a, b) => a + b, 0)).toBe(1_000);
    expect(journal()).toEqual([
      'the API is away (HTTP 404: 404 page not found (the path is not served yet)) at read Route shop/app: retrying for up to 1 s',
      'the API is still away after 1 s: read Route shop/app gives up',
    ]);
    function retry(r: ReturnType<typeof createRetry>) {
      return r('read Route shop/app', () => Promise.reject(barePath)).catch((err: unknown) => err);
    }
  });

  it('does not retry an answer, a missing object among them', async () => {
    const clock = fakeClock();
    const { log, journal } = memoryLog();
    const retry = createRetry(clock, log, policy);
    await expect(retry('read', () => Promise.reject(api(409)))).rejects.toMatchObject({ code: 409 });
    await expect(retry('read', () => Promise.reject(missingRoute))).rejects.toBe(missingRoute);
    expect(clock.waits).toEqual([]);
    expect(journal()).toEqual([]);
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
