import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CommandError, RolledBackError } from '../base/errors.js';
import type { Site } from '../config/site.js';
import { createLogger } from '../log/logger.js';
import type { Clock } from '../ports/clock.js';
import { createRootFs } from '../ports/fs.js';
import { createBanner } from './banner.js';
import { runSteps } from './engine.js';
import { SLI_FILE, SliStore } from './sli.js';
import { StateStore } from './state.js';
import type { Step, StepContext, StepName } from './step.js';

const STATE_DIR = '/var/lib/sno-relocate';

/** a clock that moves only when a step says so: durations are what the steps took, exactly */
function steppedClock(): Clock & { advance(ms: number): void } {
  let ms = Date.parse('2026-11-26T08:00:00.000Z');
  let mono = 1000;
  return {
    now: () => new Date(ms),
    monotonic: () => mono,
    advance(by) {
      ms += by;
      mono += by;
    },
  } as Clock & { advance(ms: number): void };
}

/** a node step that takes `ms` and, while `fail` holds an error, throws it */
function timedStep(name: StepName, ms: number, clock: { advance(ms: number): void }, fail: { err?: Error } = {}): Step {
  let applied = false;
  return {
    name,
    group: 'node',
    description: name,
    inputs: () => name,
    survey: async () => applied,
    plan: (done) =>
      done
        ? { action: 'noop', reason: 'done' }
        : { action: 'change', summary: name, changes: [{ action: 'update', target: name }] },
    apply: async () => {
      clock.advance(ms);
      if (fail.err) throw fail.err;
      applied = true;
    },
  } as Step;
}

function setup() {
  const root = mkdtempSync(path.join(tmpdir(), 'sli-'));
  const fs = createRootFs(root);
  const clock = steppedClock();
  const ctx = {
    site: { name: 'store-1' } as Site,
    fs,
    log: createLogger({ write: () => undefined, journal: false, level: 'error' }),
    clock,
    stateDir: STATE_DIR,
  } as unknown as StepContext;
  const run = (steps: Step[]) =>
    runSteps({
      steps,
      selected: new Set(steps.map((s) => s.name)),
      ctx,
      store: new StateStore(fs, STATE_DIR),
      sli: new SliStore(fs, STATE_DIR),
      banner: createBanner(undefined),
      configHash: 'h1',
    }).catch(() => undefined);
  const figures = () => JSON.parse(readFileSync(path.join(root, STATE_DIR, SLI_FILE), 'utf8'));
  const state = () => JSON.parse(readFileSync(path.join(root, STATE_DIR, 'state.json'), 'utf8'));
  return { clock, run, figures, state };
}

describe('the relocation figures a run leaves for the metrics', () => {
  it('counts a network rollback, then a success, with each step duration and the last success time', async () => {
    const { clock, run, figures, state } = setup();
    const network: { err?: Error } = {
      err: new RolledBackError('network: checks failed; rolled back', { step: 'network' }),
    };
    const steps = [timedStep('hostname', 2000, clock), timedStep('network', 90_000, clock, network)];

    await run(steps);
    expect(figures()).toMatchObject({
      runs: { succeeded: 0, failed: 1, refused: 0 },
      stepFailures: { network: { rollback: 1 } },
      networkRollbacks: 1,
      lastRun: { result: 'failed', durationSeconds: 92, steps: { hostname: 2, network: 90 } },
    });
    expect(figures().lastSuccessAt).toBeUndefined();
    expect(figures().running).toBeUndefined();
    // the state keeps what the failed step planned, for the support bundle
    expect(state().steps.network.plan).toEqual(['update network']);

    delete network.err;
    await run(steps);
    const after = figures();
    expect(after.runs).toEqual({ succeeded: 1, failed: 1, refused: 0 });
    expect(after.networkRollbacks).toBe(1);
    // the resumed run redid only the network: hostname's noop took no time
    expect(after.lastRun).toMatchObject({
      result: 'succeeded',
      durationSeconds: 90,
      steps: { hostname: 0, network: 90 },
    });
    expect(after.lastSuccessAt).toBe(after.lastRun.finishedAt);
  });

  it('classes a failed command apart from a rollback, and a refusal at the preflight as such', async () => {
    const { clock, run, figures } = setup();
    const failing = { err: new CommandError('ip failed', 'ip', 1, '', { step: 'internal-ip' }) as Error };
    await run([timedStep('internal-ip', 10, clock, failing)]);
    const conflict: Step = {
      ...timedStep('hostname', 0, clock),
      plan: () => ({ action: 'conflict', reason: 'host holds something else' }),
    };
    await run([conflict]);
    expect(figures()).toMatchObject({
      runs: { succeeded: 0, failed: 1, refused: 1 },
      stepFailures: { 'internal-ip': { command: 1 }, preflight: { refused: 1 } },
      networkRollbacks: 0,
    });
  });
});
