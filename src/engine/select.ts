/** --only and --skip: step names and the node / cluster groups, from the list of steps given. */
import { UsageError } from '../base/errors.js';
import { STEP_GROUPS, type Step, type StepName } from './step.js';

function expand(steps: readonly Step[], list: string, flag: string): Set<StepName> {
  const out = new Set<StepName>();
  for (const raw of list.split(',')) {
    const item = raw.trim();
    if (!item) continue;
    const matched = steps.filter((s) => s.name === item || s.group === item);
    if (matched.length === 0) {
      const names = steps.map((s) => s.name).join(', ');
      throw new UsageError(
        `${flag}: unknown step or group "${item}" (steps: ${names}; groups: ${STEP_GROUPS.join(', ')})`,
      );
    }
    for (const s of matched) out.add(s.name);
  }
  return out;
}

export function selectSteps(steps: readonly Step[], only: string | undefined, skip: string | undefined): Set<StepName> {
  const selected = only === undefined ? new Set(steps.map((s) => s.name)) : expand(steps, only, '--only');
  if (skip !== undefined) for (const s of expand(steps, skip, '--skip')) selected.delete(s);
  if (selected.size === 0) throw new UsageError('--only/--skip leave no step to run');
  return new Set(steps.filter((s) => selected.has(s.name)).map((s) => s.name));
}
