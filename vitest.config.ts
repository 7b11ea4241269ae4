import { defineConfig } from 'vitest/config';

// Unit, fixture, black-box and real kube-apiserver tests. The VM suite has its own config
// (vitest.e2e.config.ts): it boots virtual machines and runs one file at a time.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['test/e2e/**', 'node_modules/**', 'dist/**'],
    // an unexpected error-level log line fails the test, in every tier
    setupFiles: ['test/helpers/error-log-hook.ts'],
    // one shared kube-apiserver + etcd per worker, reset between files (test/kube/pool.ts)
    globalSetup: ['test/kube/pool-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
});
