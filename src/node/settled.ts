/** Verification shared by the node steps whose plan reads the whole truth from the host. */
import { VerificationError } from '../base/errors.js';
import type { LegacyStep, StepContext } from '../engine/step.js';

/** Plans again: after apply there must be nothing left to do. */
export async function expectSettled(step: LegacyStep, ctx: StepContext): Promise<void> {
  const plan = await step.plan(ctx);
  if (plan.action === 'noop') return;
  const left =
    plan.action === 'change'
      ? plan.changes.map((c) => `${c.action} ${c.target}${c.summary ? ` (${c.summary})` : ''}`).join('; ')
      : plan.reason;
  throw new VerificationError(`${step.name}: the host still differs after apply: ${left}`, {
    step: step.name,
    retryable: true,
  });
}
