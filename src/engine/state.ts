/**
 * The one state file: per-step status and input hash, written atomically so a
 * power cut leaves the previous or the next version, never half of one.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import * as z from 'zod';
import type { RootFs } from '../ports/fs.js';
import { readJsonFile } from '../ports/json-file.js';
import { RefusedError } from '../base/errors.js';
import type { HoldAt } from './hold.js';
import { byCodeUnit } from '../base/order.js';

export const STATE_FILE = 'state.json';

const stepRecord = z.object({
  status: z.enum(['running', 'done', 'failed']),
  inputHash: z.string(),
  attempts: z.number().int().nonnegative(),
  startedAt: z.string(),
  finishedAt: z.string().optional(),
  durationMs: z.number().optional(),
  message: z.string().optional(),
});

const runState = z.object({
  version: z.literal(1),
  site: z.string(),
  configHash: z.string(),
  result: z.enum(['running', 'succeeded', 'failed', 'refused']),
  startedAt: z.string(),
  finishedAt: z.string().optional(),
  message: z.string().optional(),
  /** the steps this run was asked for (--only/--skip), in order; state files before it lack it */
  selected: z.array(z.string()).optional(),
  steps: z.record(z.string(), stepRecord),
});

export type StepRecord = z.infer<typeof stepRecord>;
export type RunState = z.infer<typeof runState>;

/** By UTF-16 code unit, as Array.prototype.sort does: the same order in every process locale. */

/** sha256 of a value's JSON with keys sorted by code unit, so equal inputs hash alike on every node */
export function hashOf(value: unknown): string {
  const stable = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(stable);
    if (v && typeof v === 'object')
      return Object.fromEntries(
        Object.entries(v)
          .sort(([a], [b]) => byCodeUnit(a, b))
          .map(([k, x]) => [k, stable(x)]),
      );
    return v;
  };
  return createHash('sha256')
    .update(JSON.stringify(stable(value) ?? null))
    .digest('hex');
}

export class StateStore {
  readonly file: string;

  constructor(
    private readonly fs: RootFs,
    stateDir: string,
    private readonly hold?: HoldAt,
  ) {
    this.file = path.posix.join(stateDir, STATE_FILE);
  }

  /** The last run's state; undefined when there was none. A damaged file is refused, never taken as done. */
  async load(): Promise<RunState | undefined> {
    await this.refuseNewer();
    return readJsonFile(this.fs, this.file, {
      what: 'state file',
      schema: runState,
      advice: 'refusing to guess which steps are done. Move it aside to start the run over from the first step.',
    });
  }

  /** A state file of a later format version is not damaged: it says so, and what to do. */
  private async refuseNewer(): Promise<void> {
    let version: unknown;
    try {
      version = (JSON.parse((await this.fs.readText(this.file)) ?? 'null') as { version?: unknown } | null)?.version;
    } catch {
      return;
    }
    if (typeof version === 'number' && version > 1)
      throw new RefusedError(
        `state file ${this.fs.resolve(this.file)} was written by a newer sno-relocate (state version ${version}); ` +
          'run that version, or move the file aside to start the run over from the first step.',
      );
  }

  /** `point`: the hold point of this write (hold.ts), for power-cut tests */
  async save(state: RunState, point?: string): Promise<void> {
    const hold = this.hold;
    await this.fs.writeAtomic(this.file, `${JSON.stringify(state, null, 2)}\n`, {
      mode: 0o600,
      ...(hold && point !== undefined && { beforeRename: () => hold(point) }),
    });
  }
}
