/**
 * `<state-dir>/watch.json`: the watcher's findings as `sno-relocate status` shows them. Written
 * atomically; it holds no secret, so it is world-readable like the journal's view of the same.
 */
import path from 'node:path';
import * as z from 'zod';
import { readJsonFile } from '../ports/json-file.js';
import type { RootFs } from '../ports/fs.js';
import { COMPONENTS, SEVERITIES, type Finding, type Health } from './model.js';

export const WATCH_STATUS_FILE = 'watch.json';

const findingSchema = z.object({
  component: z.enum(COMPONENTS as [Finding['component'], ...Finding['component'][]]),
  object: z.string(),
  severity: z.enum(SEVERITIES as [Finding['severity'], ...Finding['severity'][]]),
  reason: z.string(),
  since: z.string().optional(),
  hint: z.string().optional(),
});

const statusSchema = z.object({
  version: z.literal(1),
  updatedAt: z.string(),
  health: z.enum(['unknown', 'healthy', 'degraded', 'unhealthy']),
  server: z.string().optional(),
  lastSyncAt: z.string().optional(),
  syncErrors: z.record(z.string(), z.number()),
  lastSyncError: z.string().optional(),
  findings: z.array(findingSchema),
});

export type WatchStatus = z.infer<typeof statusSchema> & { health: Health };

const filePath = (stateDir: string) => path.posix.join(stateDir, WATCH_STATUS_FILE);

export async function writeWatchStatus(fs: RootFs, stateDir: string, status: WatchStatus): Promise<void> {
  await fs.writeAtomic(filePath(stateDir), `${JSON.stringify(status, null, 2)}\n`, { mode: 0o644 });
}

/** undefined when no watcher has written one */
export function readWatchStatus(fs: RootFs, stateDir: string): Promise<WatchStatus | undefined> {
  return readJsonFile(fs, filePath(stateDir), { what: 'watcher status', schema: statusSchema });
}
