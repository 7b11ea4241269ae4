/**
 * The one-line progress banner the technician watches on the console.
 * Writing it must never fail a run: a missing console is ignored. The line may quote a stick or the
 * cluster, so its control characters are escaped: one line, and nothing a terminal would act on.
 */
import { appendFile } from 'node:fs/promises';
import { safeLine } from '../log/safe-text.js';

export interface Banner {
  show(line: string): Promise<void>;
}

export function createBanner(device: string | undefined): Banner {
  return {
    async show(line) {
      if (!device) return;
      await appendFile(device, `sno-relocate: ${safeLine(line)}\n`).catch(() => undefined);
    },
  };
}
