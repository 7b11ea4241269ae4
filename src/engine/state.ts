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
import { AGENT_VERSION } from '../base/version.js';
import type { HoldAt } from './hold.js';
import { byCodeUnit } from '../base/order.js';

export const STATE_FILE = 'state.json';
/**
 * The state file's format version. Each version an agent ever wrote stays readable (STATE_FORMATS,
 * with a test per version in state.test.ts); a later one is refused with what to do, never guessed at.
 *   1: the run, its selection and each step's record.
 *   2: adds agentVersion, the version of the agent that wrote it (an upgrade shows in status), and
 *      each step's plan, for the support bundle.
 */
export const STATE_VERSION = 2;

const stepRecord = z.object({
  status: z.enum(['running', 'done', 'failed']),
  inputHash: z.string(),
  attempts: z.number().int().nonnegative(),
  startedAt: z.string(),
  finishedAt: z.string().optional(),
  durationMs: z.number().optional(),
  message: z.string().optional(),
  /** what the step planned on the host it found: each change as `action target`, redacted (version 2) */
  plan: z.array(z.string()).optional(),
  /**
   * why the step declined its change and the run went on without it (a refused rename); optional,
   * so an agent that predates it reads the file as it always did
   */
  declined: z.string().optional(),
  /** what the step's apply handed its verification (src/steps/facts.ts); optional, as declined */
  facts: z.unknown().optional(),
});

const runStateV1 = z.object({
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
const runStateV2 = runStateV1.extend({ version: z.literal(2), agentVersion: z.string() });

/** Every format an agent wrote, read as the current one: version 1 knows no writer's version. */
const STATE_FORMATS = z
  .discriminatedUnion('version', [runStateV1, runStateV2])
  .transform((s): RunState => ({ ...s, version: STATE_VERSION }));

export type StepRecord = z.infer<typeof stepRecord>;
/** The run state as this agent holds it; agentVersion is absent only in a file of version 1. */
export type RunState = Omit<z.infer<typeof runStateV2>, 'agentVersion'> & { agentVersion?: string };

/** `step: reason` for every step of the run that declined its change and let the run go on. */
export const declinedSteps = (state: Pick<RunState, 'steps'>): string[] =>
  Object.entries(state.steps).flatMap(([name, r]) => (r.declined !== undefined ? [`${name}: ${r.declined}`] : []));

/** A new run's state, as this agent writes it. */
export const newRunState = (fields: Omit<RunState, 'version' | 'agentVersion'>): RunState => ({
  version: STATE_VERSION,
  agentVersion: AGENT_VERSION,
  ...fields,
});

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
      schema: STATE_FORMATS,
      advice: 'refusing to guess which steps are done. Move it aside to start the run over from the first step.',
    });
  }

  /** A state file of a later format version is not damaged: it says so, and what to do. */
  private async refuseNewer(): Promise<void> {
    let head: { version?: unknown; agentVersion?: unknown } | null;
    try {
      head = JSON.parse((await this.fs.readText(this.file)) ?? 'null') as typeof head;
    } catch {
      return;
    }
    const version = head?.version;
    if (typeof version !== 'number' || version <= STATE_VERSION) return;
    const writer = typeof head?.agentVersion === 'string' ? ` ${head.agentVersion.slice(0, 40)}` : '';
    throw new RefusedError(
      `state file ${this.fs.resolve(this.file)} was written by a newer sno-relocate${writer} (state version ${version}; ` +
        `this is sno-relocate ${AGENT_VERSION}, which reads up to version ${STATE_VERSION}); ` +
        'run that version, or move the file aside to start the run over from the first step.',
    );
  }

  /** `point`: the hold point of this write (hold.ts), for power-cut tests */
  async save(state: RunState, point?: string): Promise<void> {
    const hold = this.hold;
    // whoever writes the file now is its writer: a run resumed after an upgrade names the new agent
    const written: RunState = { ...state, version: STATE_VERSION, agentVersion: AGENT_VERSION };
    await this.fs.writeAtomic(this.file, `${JSON.stringify(written, null, 2)}\n`, {
      mode: 0o600,
      ...(hold && point !== undefined && { beforeRename: () => hold(point) }),
    });
  }
}
