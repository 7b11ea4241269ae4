/**
 * The one-line progress banner the technician watches on the console.
 * Writing it must never fail a run: a missing console is ignored.
 */
import { appendFile } from 'node:fs/promises';

export interface Banner {
  show(line: string): Promise<void>;
}

export function createBanner(device: string | undefined): Banner {
  return {
    async show(line) {
      if (!device) return;
      await appendFile(device, `sno-relocate: ${line}\n`).catch(() => undefined);
    },
  };
}
