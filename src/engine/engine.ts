/**
 * The run loop: for each selected step in order, survey -> plan -> apply -> settle -> verify,
 * recording each result with the hash of its inputs so a rerun resumes.
 */
import { logEvent } from '../log/logger.js';
import { redactSecrets, scrubText } from '../log/redact.js';
import type { Banner } from './banner.js';
import type { HoldAt } from './hold.js';
import { errorMessage, RefusedError, SnoRelocateError, StepError, VerificationError } from '../base/errors.js';
import type { RunOutcome, SliStore } from './sli.js';
import { declinedSteps, hashOf, newRunState, type RunState, type StateStore } from './state.js';
import type { ChangePlan, PlanResult, Step, StepContext, StepName, StepPlan } from './step.js';

export interface EngineInput {
  steps: readonly Step[];
  selected: ReadonlySet<StepName>;
  ctx: StepContext;
  store: StateStore;
  banner: Banner;
  /** hash of the whole site-config, to tell a new site from a resumed run */
  configHash: string;
  /** told of every recorded change of the run's state, after it is saved (the hub report); never fails the run */
  observer?: (state: RunState) => Promise<void>;
  /** where the run leaves its figures for the watcher's metrics; never fails the run */
  sli?: SliStore;
  /** hold points for power-cut tests (hold.ts): between steps, and the steps' own */
  hold?: HoldAt;
}

const stepContext = (ctx: StepContext, step: Step): StepContext => ({
  ...ctx,
  log: ctx.log.child({ step: step.name }),
});

/**
 * What the host looks like to the step, and what the step would do about it; `after`: the facts
 * this run's apply returned, when surveying to verify it.
 */
async function surveyAndPlan(step: Step, ctx: StepContext, after?: unknown): Promise<PlanResult> {
  return step.plan(await step.survey(ctx, after), ctx.site);
}

/** The step's warnings, said once: when it is planned, not when the verification plans again. */
function sayWarnings(ctx: StepContext, plan: PlanResult): void {
  for (const warning of plan.warnings ?? []) ctx.log.warn({ warning }, warning);
}

/** The step's plan for the host as it is now (what `plan` prints for it); its warnings are logged. */
export async function planOf(step: Step, ctx: StepContext): Promise<PlanResult> {
  const plan = await surveyAndPlan(step, ctx);
  sayWarnings(ctx, plan);
  return plan;
}

/**
 * The one verification every step has unless it gives its own: surveyed again, with the facts of
 * this run's apply (`after`), nothing is left to do.
 */
export async function verifyStep(step: Step, ctx: StepContext, after?: unknown): Promise<void> {
  if (step.verify) return step.verify(ctx, after);
  const plan = await surveyAndPlan(step, ctx, after);
  if (plan.action === 'noop') return;
  const left =
    plan.action === 'change'
      ? plan.changes.map((c) => `${c.action} ${c.target}${c.summary ? ` (${c.summary})` : ''}`).join('; ')
      : plan.reason;
  throw new VerificationError(`${step.name}: still differs after apply: ${left}`, {
    step: step.name,
    retryable: true,
  });
}

/** Apply, then the step's waits: the plan's changes made and settled; apply's facts for the verification. */
async function applyAndSettle(step: Step, ctx: StepContext, plan: ChangePlan): Promise<unknown> {
  const applied: unknown = await step.apply?.(ctx, plan.decision);
  const settled: unknown = await step.settle?.(ctx, plan.decision, applied);
  return settled ?? applied;
}

/** A plan as `plan` shows it: its lines, without the warnings (said in the log) or the decision. */
const shown = (step: StepName, plan: PlanResult): StepPlan =>
  plan.action === 'change'
    ? { step, action: 'change', summary: plan.summary, changes: plan.changes }
    : { step, action: plan.action, reason: plan.reason };

/** Plans the selected steps without changing anything (what `plan` prints). */
export async function planSteps(input: Pick<EngineInput, 'steps' | 'selected' | 'ctx'>): Promise<StepPlan[]> {
  const plans: StepPlan[] = [];
  for (const step of input.steps.filter((s) => input.selected.has(s.name))) {
    // the warnings are said in the log, the plan shows what the step would do
    plans.push(shown(step.name, await planOf(step, stepContext(input.ctx, step))));
  }
  return plans;
}

function refuseConflicts(plans: readonly StepPlan[]): void {
  const conflicts = plans.filter((p) => p.action === 'conflict');
  if (conflicts.length > 0)
    throw new RefusedError(conflicts.map((c) => `${c.step}: ${c.action === 'conflict' ? c.reason : ''}`).join('; '));
}

/** The journal event and the console line of a run that stopped short: refused, or failed. */
async function announceStop(
  { ctx, banner }: EngineInput,
  result: 'refused' | 'failed',
  message: string,
  err: unknown,
): Promise<void> {
  logEvent(
    ctx.log,
    'error',
    result === 'refused' ? 'runRefused' : 'runFailed',
    { site: ctx.site.name, err },
    `run ${result}: ${message}`,
  );
  await banner.show(`${result === 'refused' ? 'REFUSED' : 'FAILED'}: ${message}`);
}

/** The run's figures for the metrics: a failure to write them is logged, and the run goes on. */
async function recordSli({ sli, ctx }: EngineInput, record: (sli: SliStore) => Promise<void>): Promise<void> {
  if (!sli) return;
  await record(sli).catch((err: unknown) =>
    ctx.log.warn({ err }, `relocation figures not recorded in ${sli.file}: ${errorMessage(err)}`),
  );
}

/** The state store, telling the observer after each save. */
function observed(store: StateStore, observer: EngineInput['observer']): Pick<StateStore, 'load' | 'save'> {
  if (!observer) return store;
  return {
    load: () => store.load(),
    save: async (state, point) => {
      await store.save(state, point);
      await observer(state);
    },
  };
}

export async function runSteps(input: EngineInput): Promise<RunState> {
  const { ctx, banner } = input;
  const store = observed(input.store, input.observer);
  // a damaged or newer state file stops the run before anything changes: said in the journal and
  // on the console, with what to do, as every refusal is
  const began = { at: ctx.clock.now(), monotonic: ctx.clock.monotonic() };
  const outcome = (result: RunOutcome['result'], extra: Pick<RunOutcome, 'state' | 'err'>): RunOutcome => ({
    result,
    startedAt: began.at,
    finishedAt: ctx.clock.now(),
    durationSeconds: Math.max(0, ctx.clock.monotonic() - began.monotonic) / 1000,
    ...extra,
  });
  // a run that stops before any step is counted too: the metrics say a run was tried and refused
  const stoppedBeforeSteps = async (err: unknown): Promise<never> => {
    const refused = err instanceof RefusedError;
    await recordSli(input, (sli) => sli.finished(outcome(refused ? 'refused' : 'failed', { err })));
    throw err;
  };
  const previous = await store.load().catch(async (err: unknown) => {
    if (err instanceof RefusedError) await announceStop(input, 'refused', errorMessage(err), err);
    return stoppedBeforeSteps(err);
  });
  const resumed = previous !== undefined && previous.configHash === input.configHash;
  const selected = input.steps.filter((s) => input.selected.has(s.name));
  const state = newRunState({
    site: ctx.site.name,
    configHash: input.configHash,
    result: 'running',
    startedAt: ctx.clock.now().toISOString(),
    selected: selected.map((s) => s.name),
    steps: resumed ? previous.steps : {},
  });
  logEvent(
    ctx.log,
    'info',
    'runStarted',
    { site: state.site, steps: selected.map((s) => s.name), resumed },
    `run started for site ${state.site}`,
  );

  // host preflight: every node step plans before the first one changes anything. A refusal here
  // changed nothing, so no state is written; it is still journaled and shown on the console.
  try {
    refuseConflicts(await planSteps({ ...input, steps: selected.filter((s) => s.group === 'node') }));
  } catch (err) {
    if (err instanceof RefusedError) await announceStop(input, 'refused', scrubText(errorMessage(err)), err);
    return stoppedBeforeSteps(err);
  }
  await store.save(state);
  await recordSli(input, (sli) => sli.started(began.at));

  try {
    for (const [index, step] of selected.entries()) {
      await banner.show(`[${index + 1}/${selected.length}] ${step.name} ...`);
      await runOne(step, stepContext(ctx, step), state, store, input.hold);
      await input.hold?.(`after:${step.name}`);
    }
  } catch (err) {
    state.result = err instanceof RefusedError ? 'refused' : 'failed';
    state.finishedAt = ctx.clock.now().toISOString();
    state.message = scrubText(errorMessage(err));
    await store.save(state);
    await recordSli(input, (sli) => sli.finished(outcome(state.result as 'failed' | 'refused', { state, err })));
    await announceStop(input, state.result, state.message, err);
    throw err;
  }
  state.result = 'succeeded';
  state.finishedAt = ctx.clock.now().toISOString();
  await store.save(state);
  await recordSli(input, (sli) => sli.finished(outcome('succeeded', { state })));
  const durationMs = Math.round(ctx.clock.monotonic() - began.monotonic);
  const declined = declinedSteps(state);
  logEvent(
    ctx.log,
    'info',
    'runFinished',
    { site: state.site, durationMs, ...(declined.length > 0 && { declined }) },
    `run finished for site ${state.site}`,
  );
  await banner.show(
    `done: site ${state.site} is configured${declined.length > 0 ? `; WARN declined: ${declined.join('; ')}` : ''}`,
  );
  return state;
}

/** Every step's recorded facts, by step. */
const factsOf = (state: RunState): Record<StepName, unknown> =>
  Object.fromEntries(
    Object.entries(state.steps).flatMap(([name, r]) => (r.facts === undefined ? [] : [[name, r.facts]])),
  );

async function runOne(
  step: Step,
  stepCtx: StepContext,
  state: RunState,
  store: Pick<StateStore, 'save'>,
  hold?: HoldAt,
): Promise<void> {
  const inputHash = hashOf(step.inputs(stepCtx.site));
  const previous = state.steps[step.name];
  // a step that declined its change is planned again as if never done: what declined may have cleared
  const doneBefore = previous?.status === 'done' && previous.declined === undefined && previous.inputHash === inputHash;
  const ctx: StepContext = {
    ...stepCtx,
    facts: { ...stepCtx.facts, ...factsOf(state) },
    run: {
      startedAt: state.startedAt,
      ...(doneBefore && previous.finishedAt !== undefined && { doneAt: previous.finishedAt }),
      ...(hold && { hold }),
    },
  };
  const began = ctx.clock.monotonic();
  let attempts = previous?.attempts ?? 0;
  let planned: string[] | undefined;
  let facts: unknown;
  logEvent(ctx.log, 'info', 'stepStarted', {}, 'step started');
  const record = (status: 'running' | 'done' | 'failed', message?: string, progress = false, declined?: string) => {
    if (status === 'running' && !progress) attempts += 1;
    state.steps[step.name] = {
      status,
      inputHash,
      attempts,
      startedAt:
        (status === 'running' && !progress ? undefined : state.steps[step.name]?.startedAt) ??
        ctx.clock.now().toISOString(),
      ...(status !== 'running' && {
        finishedAt: ctx.clock.now().toISOString(),
        durationMs: Math.round(ctx.clock.monotonic() - began),
      }),
      ...(message !== undefined && { message: scrubText(message) }),
      ...(planned && { plan: planned }),
      ...(declined !== undefined && { declined: scrubText(declined) }),
      ...(facts !== undefined && { facts: redactSecrets(facts) }),
    };
    return store.save(state, `state-write:${step.name}:${progress ? 'progress' : status}`);
  };
  try {
    // the plan is read from the real host every time: a recorded "done" alone is not trusted
    const plan = await surveyAndPlan(step, ctx);
    sayWarnings(ctx, plan);
    if (plan.action === 'conflict') throw new RefusedError(`${step.name}: ${plan.reason}`, { step: step.name });
    if (plan.action === 'declined') {
      await record('done', plan.reason, false, plan.reason);
      logEvent(ctx.log, 'warn', 'stepDeclined', { reason: plan.reason }, `declined, the run goes on: ${plan.reason}`);
      return;
    }
    if (plan.action === 'noop') {
      // a noop plan is the default verification already; a step's own runs once for a step not done before
      if (!doneBefore && step.verify) await verifyStep(step, ctx);
      await record('done', plan.reason);
      logEvent(
        ctx.log,
        'info',
        'stepSkipped',
        { reason: plan.reason, durationMs: Math.round(ctx.clock.monotonic() - began) },
        `nothing to do: ${plan.reason}`,
      );
      return;
    }
    if (doneBefore)
      ctx.log.warn({ changes: plan.changes.length }, 'recorded as done, but the host differs: applying again');
    planned = redactSecrets(plan.changes.map((c) => `${c.action} ${c.target}`));
    ctx.log.info({ changes: planned }, plan.summary);
    await record('running');
    const progress = (m: string) => record('running', m, true);
    facts = await applyAndSettle(step, { ...ctx, run: { ...ctx.run!, progress } }, plan);
    await verifyStep(step, ctx, facts);
    await record('done', plan.summary);
    logEvent(
      ctx.log,
      'info',
      'stepFinished',
      { durationMs: Math.round(ctx.clock.monotonic() - began) },
      'step finished',
    );
  } catch (err) {
    const wrapped =
      err instanceof SnoRelocateError
        ? err
        : new StepError(`${step.name}: ${errorMessage(err)}`, { step: step.name, cause: err, retryable: true });
    await record('failed', wrapped.message);
    logEvent(
      ctx.log,
      'error',
      'stepFailed',
      { durationMs: Math.round(ctx.clock.monotonic() - began), err: wrapped },
      `step failed: ${wrapped.message}`,
    );
    throw wrapped;
  }
}
