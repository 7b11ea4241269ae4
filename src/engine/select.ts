/** --only and --skip: step names and the node / cluster groups. */
import { UsageError } from './errors.js';
import { CLUSTER_STEPS, NODE_STEPS, STEP_NAMES, type StepName } from './step.js';

const GROUPS: Record<string, readonly StepName[]> = { node: NODE_STEPS, cluster: CLUSTER_STEPS };

function expand(list: string, flag: string): Set<StepName> {
  const out = new Set<StepName>();
  for (const raw of list.split(',')) {
    const item = raw.trim();
    if (!item) continue;
    const group = GROUPS[item];
    if (group) group.forEach((s) => out.add(s));
    else if ((STEP_NAMES as readonly string[]).includes(item)) out.add(item as StepName);
    else throw new UsageError(`${flag}: unknown step or group "${item}" (steps: ${STEP_NAMES.join(', ')}; groups: node, cluster)`);
  }
  return out;
}

export function selectSteps(only: string | undefined, skip: string | undefined): Set<StepName> {
  const selected = only === undefined ? new Set<StepName>(STEP_NAMES) : expand(only, '--only');
  if (skip !== undefined) for (const s of expand(skip, '--skip')) selected.delete(s);
  if (selected.size === 0) throw new UsageError('--only/--skip leave no step to run');
  return selected;
}
