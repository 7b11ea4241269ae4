import { defineConfig } from 'vitest/config';

// Virtual machines under software emulation: minutes per test, one file at a time.
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
});
