/**
 * Warnings a step finds while surveying: said in the log when the step is planned, so `plan` shows
 * them too, and not again when the engine's verification surveys a second time.
 */
import type { StepContext } from './step.js';

const warned = new WeakMap<StepContext, Set<string>>();

/** Logs each warning once per step context (one run of one step). */
export function warnOnce(ctx: StepContext, warnings: Iterable<string>): void {
  let said = warned.get(ctx);
  if (!said) warned.set(ctx, (said = new Set()));
  for (const w of warnings) {
    if (said.has(w)) continue;
    said.add(w);
    ctx.log.warn({ warning: w }, w);
  }
}
