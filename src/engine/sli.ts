/**
 * `<state-dir>/sli.json`: the relocation figures the agent leaves for the watcher to serve as
 * metrics (watch/metrics.ts). The agent is a oneshot, so it keeps its counters here across runs:
 * runs by result, step failures by step and reason class, network rollbacks, the last success,
 * and the last run's durations. Written atomically, world-readable: it holds step names, counts
 * and times, never a message.
 */
import path from 'node:path';
import * as z from 'zod';
import { CommandError, ConfigError, RefusedError, RolledBackError, VerificationError } from '../base/errors.js';
import type { RootFs } from '../ports/fs.js';
import { readJsonFile } from '../ports/json-file.js';
import type { RunState } from './state.js';

export const SLI_FILE = 'sli.json';

/** Why a step failed, in few enough classes to be a metric label. */
export const REASON_CLASSES = ['invalid', 'refused', 'rollback', 'verification', 'command', 'other'] as const;
export type ReasonClass = (typeof REASON_CLASSES)[number];
/** the label of a run stopped before any step ran: its state file, or the host preflight of the node steps */
export const PREFLIGHT = 'preflight';
/** the label of a site-config that was not admitted: invalid, or refused for its signature, CA or clock */
export const ADMISSION = 'admission';

export function reasonClassOf(err: unknown): ReasonClass {
  if (err instanceof ConfigError) return 'invalid';
  if (err instanceof RefusedError) return 'refused';
  if (err instanceof RolledBackError) return 'rollback';
  if (err instanceof VerificationError) return 'verification';
  if (err instanceof CommandError) return 'command';
  return 'other';
}

const count = z.number().int().nonnegative();
const sliSchema = z.object({
  version: z.literal(1),
  runs: z.object({ succeeded: count, failed: count, refused: count }),
  /** step -> reason class -> failures */
  stepFailures: z.record(z.string(), z.partialRecord(z.enum(REASON_CLASSES), count)),
  networkRollbacks: count,
  lastSuccessAt: z.string().optional(),
  /** the run going on now; absent between runs */
  running: z.object({ startedAt: z.string() }).optional(),
  lastRun: z
    .object({
      result: z.enum(['succeeded', 'failed', 'refused']),
      startedAt: z.string(),
      finishedAt: z.string(),
      durationSeconds: z.number().nonnegative(),
      /** for a run that did not succeed: the step that stopped it (or preflight, admission) and the reason class */
      stoppedAt: z.string().optional(),
      reason: z.enum(REASON_CLASSES).optional(),
      /** each step of the run that recorded a duration, in seconds */
      steps: z.record(z.string(), z.number().nonnegative()),
    })
    .optional(),
});
export type Sli = z.infer<typeof sliSchema>;

const EMPTY: Sli = { version: 1, runs: { succeeded: 0, failed: 0, refused: 0 }, stepFailures: {}, networkRollbacks: 0 };

export interface RunOutcome {
  result: 'succeeded' | 'failed' | 'refused';
  startedAt: Date;
  finishedAt: Date;
  durationSeconds: number;
  /** the run's state, for the steps' durations; a refusal at the preflight has none */
  state?: RunState;
  err?: unknown;
  /** where the run stopped, when no step did: preflight by default */
  stoppedAt?: typeof ADMISSION;
}

export class SliStore {
  readonly file: string;

  constructor(
    private readonly fs: RootFs,
    stateDir: string,
  ) {
    this.file = path.posix.join(stateDir, SLI_FILE);
  }

  /** The figures so far; none before the first run. A damaged file is refused (the watcher says so). */
  load(): Promise<Sli | undefined> {
    return readJsonFile(this.fs, this.file, {
      what: 'relocation figures',
      schema: sliSchema,
      advice: 'move it aside: the counters start again from zero.',
    });
  }

  async started(at: Date): Promise<void> {
    const sli = (await this.load()) ?? EMPTY;
    await this.save({ ...sli, running: { startedAt: at.toISOString() } });
  }

  async finished(outcome: RunOutcome): Promise<void> {
    const { running: _done, ...sli } = (await this.load()) ?? EMPTY;
    const runs = { ...sli.runs, [outcome.result]: sli.runs[outcome.result] + 1 };
    const stepFailures = { ...sli.stepFailures };
    let { networkRollbacks } = sli;
    const stopped =
      outcome.result === 'succeeded'
        ? undefined
        : { stoppedAt: outcome.stoppedAt ?? failedStep(outcome) ?? PREFLIGHT, reason: reasonClassOf(outcome.err) };
    if (stopped) {
      const { stoppedAt: step, reason } = stopped;
      stepFailures[step] = { ...stepFailures[step], [reason]: (stepFailures[step]?.[reason] ?? 0) + 1 };
      if (reason === 'rollback' && step === 'network') networkRollbacks += 1;
    }
    const since = outcome.startedAt.getTime();
    const steps = Object.fromEntries(
      Object.entries(outcome.state?.steps ?? {})
        .filter(([, r]) => r.durationMs !== undefined && r.finishedAt && Date.parse(r.finishedAt) >= since)
        .map(([name, r]) => [name, r.durationMs! / 1000]),
    );
    await this.save({
      ...sli,
      runs,
      stepFailures,
      networkRollbacks,
      ...(outcome.result === 'succeeded' && { lastSuccessAt: outcome.finishedAt.toISOString() }),
      lastRun: {
        result: outcome.result,
        startedAt: outcome.startedAt.toISOString(),
        finishedAt: outcome.finishedAt.toISOString(),
        durationSeconds: outcome.durationSeconds,
        ...stopped,
        steps,
      },
    });
  }

  /**
   * A site-config that was not admitted (invalid, or refused for its signature, CA or clock): the
   * engine never ran, so the run is counted here, with no duration, as stopped at admission.
   */
  notAdmitted(at: Date, err: unknown): Promise<void> {
    const result = err instanceof ConfigError || err instanceof RefusedError ? 'refused' : 'failed';
    return this.finished({ result, startedAt: at, finishedAt: at, durationSeconds: 0, err, stoppedAt: ADMISSION });
  }

  private save(sli: Sli): Promise<void> {
    return this.fs.writeAtomic(this.file, `${JSON.stringify(sli, null, 2)}\n`, { mode: 0o644 });
  }
}

function failedStep({ err, state }: RunOutcome): string | undefined {
  if (err instanceof Error && 'step' in err && typeof err.step === 'string') return err.step;
  return Object.entries(state?.steps ?? {}).find(([, r]) => r.status === 'failed')?.[0];
}
