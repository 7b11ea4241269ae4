import { planSteps } from '../../engine/engine.js';
import { selectSteps } from '../../engine/select.js';
import { errorMessage, ExitCode, SnoRelocateError } from '../../base/errors.js';
import { STEPS } from '../../steps/index.js';
import { atMostOnePath, type Invocation, oneOf } from '../args.js';
import type { OptionsOf } from './options.js';
import { renderPlan, type ShownPlan } from '../render-plan.js';
import { createRuntime, createStepContext, loadSite } from '../runtime.js';
import { refuseUnopened } from '../../trust/admitted.js';
import type { CommandResult } from './result.js';

const PLAN_API_WAIT_MS = 5000;

export async function planCommand(inv: Invocation<OptionsOf<'plan'>>): Promise<CommandResult> {
  const format = oneOf('-o', inv.flags.output, ['text', 'json', 'yaml'] as const, 'text');
  const selected = selectSteps(STEPS, inv.flags.only, inv.flags.skip);
  const rt = createRuntime(inv.flags);
  const loaded = await loadSite(rt, atMostOnePath('plan', inv.positionals));
  if (!loaded) return { exitCode: 0, stdout: 'no site-config found: nothing to plan\n' };
  // what run would refuse, the plan refuses: secrets this node cannot open
  refuseUnopened(loaded);
  // a plan is a look, not a wait: an API that does not answer within seconds defers the cluster steps
  const { ctx, close } = createStepContext(
    rt,
    loaded,
    {
      healthTimeoutSeconds: inv.flags['health-timeout'],
      healthStableSeconds: inv.flags['health-stable'],
    },
    { kubeReadyTimeoutMs: PLAN_API_WAIT_MS },
  );
  const steps: ShownPlan[] = [];
  try {
    for (const step of STEPS.filter((s) => selected.has(s.name))) {
      try {
        steps.push(...(await planSteps({ steps: [step], selected, ctx })));
      } catch (err) {
        // Before kubelet runs there is no API to plan the cluster steps against, and a workstation
        // has no systemd or NetworkManager to ask: show the rest of the plan and say what is
        // missing. Config and trust errors still stop the plan.
        if (err instanceof SnoRelocateError && err.exitCode !== 1) throw err;
        steps.push({ step: step.name, action: 'deferred', reason: `cannot be planned here: ${errorMessage(err)}` });
      }
    }
  } finally {
    close();
  }
  // a step in conflict with the host is what `run` refuses: the plan says so with the same exit code;
  // a step the run would decline (and go on without) says so too, for the factory to fix before shipping
  const exitCode = steps.some((s) => s.action === 'conflict' || s.action === 'declined')
    ? ExitCode.refused
    : ExitCode.ok;
  return { exitCode, stdout: renderPlan({ site: loaded.site.name, siteConfig: loaded.file, steps }, format) };
}
