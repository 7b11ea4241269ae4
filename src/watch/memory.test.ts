import { describe, expect, it } from 'vitest';
import { collectGarbage } from './memory.js';

describe('collectGarbage', () => {
  it('hands back what nothing holds any more, without exposing gc() to the program', () => {
    let garbage: object[] | undefined = Array.from({ length: 500_000 }, (_, i) => ({ i, name: `object-${i}` }));
    const held = process.memoryUsage().heapUsed;
    expect(garbage.length).toBe(500_000);
    garbage = undefined;
    collectGarbage();
    expect(held - process.memoryUsage().heapUsed).toBeGreaterThan(20 * 1024 * 1024);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});
