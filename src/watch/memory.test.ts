import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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

describe('interpreterOnly', () => {
  /** V8's optimisation status of a hot function (bits of %GetOptimizationStatus), in a fresh process */
  const hotFunctionStatus = (interpreterOnly: boolean): number => {
    const memory = path.join(path.dirname(fileURLToPath(import.meta.url)), 'memory.ts');
    const code = `
      import v8 from 'node:v8';
      const { interpreterOnly } = await import(${JSON.stringify(memory)});
      if (${interpreterOnly}) interpreterOnly();
      v8.setFlagsFromString('--allow-natives-syntax');
      const hot = new Function('x', 'return x * 2 + 1');
      for (let i = 0; i < 2_000_000; i++) hot(i);
      console.log(new Function('f', 'return %GetOptimizationStatus(f)')(hot));`;
    return Number(
      execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' }),
    );
  };
  const TURBOFAN = 1 << 6;
  const BASELINE = 1 << 15;

  it('leaves a hot function interpreted, where V8 would otherwise compile it', () => {
    expect(hotFunctionStatus(false) & (TURBOFAN | BASELINE)).not.toBe(0);
    expect(hotFunctionStatus(true) & (TURBOFAN | BASELINE)).toBe(0);
  });
});
