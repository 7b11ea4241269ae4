/**
 * What admission leaves to the clock step (the findings of time it deferred to the synchronised
 * clock, the lower bounds of the time it knows) reaches the step as a fact given before the first
 * step, through the engine: in `plan` as in `run`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { planSteps } from '../../src/engine/engine.js';
import { clockStep } from '../../src/steps/clock.js';
import type { StepFacts } from '../../src/steps/facts.js';
import { testNode, type TestNode } from './context.js';

const admission: StepFacts['admission'] = {
  deferred: [
    {
      severity: 'warning',
      path: 'certs/api.crt',
      message: 'not valid before 2031-01-01T00:00:00.000Z on this clock',
      judgedAt: { notBefore: '2031-01-01T00:00:00.000Z', notAfter: '2032-01-01T00:00:00.000Z' },
    } as StepFacts['admission']['deferred'][number],
  ],
  timeMarks: [{ what: 'site-config signature', at: new Date('2030-06-01T00:00:00Z') }],
};

describe("the clock step reads admission's facts", () => {
  let node: TestNode | undefined;
  afterEach(() => node?.close());

  it('surveys the deferred findings and the lower bound admission gave', async () => {
    node = testNode();
    const view = await clockStep.survey({ ...node.ctx, facts: { admission } });
    expect(view.deferred).toEqual(admission.deferred);
    expect(view.bound).toEqual(admission.timeMarks[0]);
  });

  it('plans on them: a clock before the signature is a conflict, named, in plan without a run', async () => {
    node = testNode();
    const [plan] = await planSteps({
      steps: [clockStep],
      selected: new Set(['clock']),
      ctx: { ...node.ctx, facts: { admission } },
    });
    expect(plan).toMatchObject({ step: 'clock', action: 'conflict' });
    expect(plan!.action === 'conflict' && plan!.reason).toMatch(/site-config signature/);
  });
});
