/** `plan` output: the step plans as data (json, yaml) or as a diff-like text. */
import yaml from 'js-yaml';
import type { StepPlan } from '../engine/step.js';
import { redactSecrets } from '../log/redact.js';
import { describeRollouts, type RolloutKind } from '../kube/rollout-costs.js';
import { STEPS } from '../steps/index.js';

export type ShownPlan = StepPlan | { step: StepPlan['step']; action: 'deferred'; reason: string };

export interface PlanDocument {
  site: string;
  siteConfig: string;
  steps: ShownPlan[];
}

const MARK = { noop: '=', change: '~', conflict: '!', declined: '-', deferred: '?' } as const;

export function renderPlan(doc: PlanDocument, format: 'text' | 'json' | 'yaml'): string {
  const safe = redactSecrets(doc);
  if (format === 'json') return `${JSON.stringify(safe, null, 2)}\n`;
  if (format === 'yaml') return yaml.dump(safe, { noRefs: true, lineWidth: 120 });
  const lines = [`Plan for site ${safe.site} (${safe.siteConfig})`, ''];
  for (const p of safe.steps) {
    const head = `${MARK[p.action]} ${p.step.padEnd(20)}`;
    if (p.action === 'change') {
      lines.push(`${head} ${p.summary}`);
      for (const c of p.changes) {
        lines.push(`      ${c.action} ${c.target}${c.summary ? `: ${c.summary}` : ''}`);
        for (const d of c.diff ?? []) lines.push(`        ${d}`);
      }
    } else {
      lines.push(`${head} ${p.action === 'noop' ? 'unchanged' : p.action}: ${p.reason}`);
    }
  }
  const count = (a: ShownPlan['action']) => safe.steps.filter((p) => p.action === a).length;
  lines.push(
    '',
    `${safe.steps.length} steps: ${count('change')} to change, ${count('noop')} unchanged, ${count('conflict')} in conflict, ${count('declined')} declined, ${count('deferred')} deferred (planned when they run)`,
    `Control-plane rollouts and reboots this run causes: ${rolloutLine(safe.steps)}`,
    ...(deferred(safe.steps, (name) => name === 'access')
      ? [`Factory admin kubeconfig: ${UNKNOWN} (access is deferred)`]
      : []),
  );
  return `${lines.join('\n')}\n`;
}

const UNKNOWN = 'unknown until the API answers';
const CLUSTER_STEPS: ReadonlySet<string> = new Set(STEPS.filter((s) => s.group === 'cluster').map((s) => s.name));

/** The names of the deferred steps `which` picks, or undefined when none is. */
function deferred(steps: readonly ShownPlan[], which: (name: string) => boolean): string | undefined {
  const names = steps.filter((p) => p.action === 'deferred' && which(p.step)).map((p) => p.step);
  return names.length > 0 ? names.join(', ') : undefined;
}

/** What the planned changes cost; unknown while a cluster step, which may roll something out, is deferred. */
function rolloutLine(steps: readonly ShownPlan[]): string {
  const known = describeRollouts(rolloutsOf(steps));
  const waiting = deferred(steps, (name) => CLUSTER_STEPS.has(name));
  if (!waiting) return known;
  return `${UNKNOWN} (deferred: ${waiting})${known === 'none' ? '' : `; planned so far: ${known}`}`;
}

/** The rollouts the planned changes cause, one after another. */
export const rolloutsOf = (steps: readonly ShownPlan[]): RolloutKind[] =>
  steps.flatMap((p) => (p.action === 'change' ? p.changes.flatMap((c) => c.rollouts ?? []) : []));
