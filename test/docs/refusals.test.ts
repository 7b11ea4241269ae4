/**
 * docs/refusals.md lists every refusal with where it is decided and what the node looks like after
 * it. Walked here: every step of the run has its row, in the run's order; every admission rule has
 * one; and each row that refuses is played through the real engine with steps standing in for the
 * run's (same names, groups and order), the row's step refusing as the row says: what the engine
 * applied before the refusal is what the row's stage says the node looks like after it.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RefusedError } from '../../src/base/errors.js';
import { NODE_RULES } from '../../src/config/admit.js';
import type { Site } from '../../src/config/site.js';
import { createBanner } from '../../src/engine/banner.js';
import { runSteps } from '../../src/engine/engine.js';
import { StateStore } from '../../src/engine/state.js';
import type { PlanResult, Step, StepContext } from '../../src/engine/step.js';
import { createLogger } from '../../src/log/logger.js';
import { systemClock } from '../../src/ports/clock.js';
import { createRootFs } from '../../src/ports/fs.js';
import { STEPS } from '../../src/steps/index.js';
import { REPO } from '../helpers/cli.js';

const STAGES = ['admission', 'host preflight', 'clock step', 'cluster step', 'declined'] as const;
type Stage = (typeof STAGES)[number];

interface Row {
  stage: Stage;
  by: string;
  refusal: string;
}

const doc = readFileSync(path.join(REPO, 'docs/refusals.md'), 'utf8');
const rows: Row[] = doc
  .slice(doc.indexOf('<!-- refusals:'))
  .split('\n')
  .filter((l) => l.startsWith('| `'))
  .map((l) => {
    const [stage, by, refusal] = l.slice(2, -2).split(' | ') as [string, string, string];
    return { stage: stage.replace(/`/g, '') as Stage, by: by.replace(/`/g, ''), refusal };
  });
const stepRows = rows.filter((r) => r.stage !== 'admission');
const refusing = stepRows.filter((r) => !r.refusal.startsWith('never refuses'));

/** What the engine applied, and how the run ended, when the row's step refuses as the row says. */
async function play(row: Row): Promise<{ applied: string[]; result: string | undefined; err: unknown }> {
  const applied: string[] = [];
  const stand = (real: Step): Step => {
    const refuses = real.name === row.by;
    const plan = (): PlanResult => {
      if (refuses && (row.stage === 'host preflight' || row.stage === 'cluster step'))
        return { action: 'conflict', reason: row.refusal };
      if (refuses && row.stage === 'declined') return { action: 'declined', reason: row.refusal };
      return {
        action: 'change',
        summary: real.name,
        changes: [{ action: 'set', target: real.name }],
        decision: real.name,
      };
    };
    return {
      name: real.name,
      group: real.group,
      description: real.description,
      inputs: () => null,
      survey: async () => undefined,
      plan,
      apply: async () => {
        applied.push(real.name);
      },
      // the clock's refusal comes when it judges time again, after its wait for chronyd
      verify: async () => {
        if (refuses && row.stage === 'clock step') throw new RefusedError(row.refusal, { step: real.name });
      },
    };
  };
  const root = mkdtempSync(path.join(tmpdir(), 'refusals-'));
  const fs = createRootFs(root);
  const ctx = {
    site: { name: 'store-0042' } as Site,
    fs,
    log: createLogger({ write: () => undefined, journal: false }),
    clock: systemClock,
    stateDir: '/var/lib/sno-relocate',
  } as unknown as StepContext;
  const store = new StateStore(fs, '/var/lib/sno-relocate');
  const steps = STEPS.map(stand);
  const err = await runSteps({
    steps,
    selected: new Set(steps.map((s) => s.name)),
    ctx,
    store,
    banner: createBanner(undefined),
    configHash: 'h',
  }).then(
    () => undefined,
    (e: unknown) => e,
  );
  return { applied, result: (await store.load())?.result, err };
}

const names = (steps: readonly Step[]) => steps.map((s) => s.name);

describe('docs/refusals.md', () => {
  it('names a known stage on every row, every step of the run once and in its order, every admission rule', () => {
    for (const r of rows) expect(STAGES, JSON.stringify(r)).toContain(r.stage);
    expect(stepRows.map((r) => r.by)).toEqual(names(STEPS));
    const admission = rows.filter((r) => r.stage === 'admission').map((r) => r.by);
    for (const rule of NODE_RULES) expect(admission).toContain(rule);
  });

  it.each(refusing.map((r) => [r.by, r.stage, r] as const))(
    '%s (%s): the node after it is what the row says',
    async (name, stage, row) => {
      const { applied, result, err } = await play(row);
      const index = STEPS.findIndex((s) => s.name === name);
      const before = names(STEPS.slice(0, index));
      const step = STEPS[index]!;
      if (stage === 'host preflight') {
        expect(step.group).toBe('node');
        expect(err).toBeInstanceOf(RefusedError);
        expect(applied).toEqual([]);
        expect(result).toBeUndefined();
      } else if (stage === 'clock step') {
        expect(step.group).toBe('node');
        expect(err).toBeInstanceOf(RefusedError);
        expect(applied).toEqual([...before, name]);
        expect(applied).not.toContain('kubelet');
        expect(result).toBe('refused');
      } else if (stage === 'cluster step') {
        expect(step.group).toBe('cluster');
        expect(err).toBeInstanceOf(RefusedError);
        expect(applied).toEqual(before);
        expect(applied).toContain('kubelet');
        expect(result).toBe('refused');
      } else {
        expect(err).toBeUndefined();
        expect(applied).toEqual(names(STEPS).filter((n) => n !== name));
        expect(result).toBe('succeeded');
      }
    },
  );
});
