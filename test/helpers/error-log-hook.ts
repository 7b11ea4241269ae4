/** Registered for every test file (vitest.config.ts setupFiles): fails a test that logged an unexpected error. */
import { afterEach } from 'vitest';
import { takeUnexpectedErrorLines } from './error-log.js';

afterEach(() => {
  const unexpected = takeUnexpectedErrorLines();
  if (unexpected.length) throw new Error(`unexpected error-level log lines:\n${unexpected.join('\n')}`);
});
