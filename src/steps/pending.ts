/**
 * A step declared in the order but not built into this binary yet: `plan`
 * says so and `run` refuses it with a clear error, never a silent success.
 */
import { StepError } from '../engine/errors.js';
import { groupOf, type Step, type StepName } from '../engine/step.js';

export function pendingStep(name: StepName): Step {
  return {
    name,
    group: groupOf(name),
    inputs: () => null,
    plan: async () => ({ action: 'change', summary: 'not implemented in this build', changes: [] }),
    apply: async () => {
      throw new StepError(`${name}: not implemented in this build`, { step: name });
    },
    verify: async () => undefined,
  };
}
