import { describe, expect, it } from 'vitest';
import { checkImages, verdictOf } from './check.js';
import type { Outcome } from './client.js';

const D = (n: number) => `sha256:${String(n).padStart(64, '0')}`;
const images = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ image: `quay.io/ocp/art@${D(i)}`, role: 'payload' as const, users: ['x'] }));
const mirrors = [{ source: 'quay.io/ocp', mirrors: ['m.site/ocp'] }];

describe('checkImages: the bounds', () => {
  it('stops at the time bound and refuses, naming how many went unchecked', async () => {
    let now = 0;
    const report = await checkImages({
      images: images(10),
      digestMirrors: mirrors,
      tagMirrors: [],
      // each answer takes 1 s of the check's clock
      client: {
        ping: async (): Promise<Outcome> => ({ kind: 'present' }),
        manifest: async (): Promise<Outcome> => ((now += 1000), { kind: 'present' }),
      },
      concurrency: 1,
      timeoutSeconds: 3,
      monotonic: () => now,
    });
    expect(verdictOf(report)).toEqual({
      refused: 'the registry check did not finish within 3 s: 6 of 10 images unchecked',
    });
  });

  it('asks an unreachable source once, not once per image, and keeps to the concurrency', async () => {
    const asked: string[] = [];
    let inFlight = 0;
    let most = 0;
    const report = await checkImages({
      images: images(20),
      digestMirrors: mirrors,
      tagMirrors: [],
      client: {
        ping: async (): Promise<Outcome> => ({ kind: 'present' }),
        manifest: async (location): Promise<Outcome> => {
          asked.push(location);
          most = Math.max(most, ++inFlight);
          await new Promise((resolve) => setImmediate(resolve));
          inFlight -= 1;
          return location.startsWith('m.site')
            ? { kind: 'missing', detail: 'm.site: no manifest' }
            : { kind: 'unreachable', detail: 'quay.io: ENOTFOUND' };
        },
      },
      concurrency: 4,
      timeoutSeconds: 60,
      monotonic: () => 0,
    });
    expect(most).toBe(4);
    // the first four asked the source together; no image after them did
    expect(asked.filter((l) => l.startsWith('quay.io')).length).toBeLessThanOrEqual(4);
    expect(report.results.every((r) => r.status === 'missing')).toBe(true);
    expect(report.results.at(-1)?.asked).toEqual([
      { at: `m.site/ocp/art@${D(19)}`, answer: 'm.site: no manifest' },
      { at: `quay.io/ocp/art@${D(19)}`, answer: 'quay.io: ENOTFOUND' },
    ]);
  });
});
