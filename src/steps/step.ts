/**
 * The step contract bound to this agent's site-config: what every file under src/steps
 * implements. The contract itself is the engine's (src/engine/step.ts), which knows nothing of
 * the site-config's shape, so config sits below the engine.
 */
import type { Site } from '../config/site.js';
import type { Step as EngineStep, StepContext as EngineStepContext } from '../engine/step.js';

/**
 * A step of this agent: V its view, D the decision its plan hands apply, F the facts its apply
 * hands its verification (facts.ts).
 */
export type Step<V, D, F = unknown> = EngineStep<Site, V, D, F>;
/** Any step of this agent, as the order (index.ts) and the commands hold them. */
export type AnyStep = EngineStep<Site>;
export type StepContext = EngineStepContext<Site>;
