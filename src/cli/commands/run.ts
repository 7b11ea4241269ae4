import { runSteps } from '../../engine/engine.js';
import { SliStore } from '../../engine/sli.js';
import { selectSteps } from '../../engine/select.js';
import { holdPoints } from '../../engine/hold.js';
import { StateStore } from '../../engine/state.js';
import { hubObserver } from '../../hub/report.js';
import { errorMessage } from '../../base/errors.js';
import { logEvent } from '../../log/logger.js';
import { closeGateUnlessFor, gateOpenFor } from '../../node/kubelet-gate.js';
import { kubeletHeldLine } from '../../node/kubelet-held.js';
import { STEPS } from '../../steps/index.js';
import { atMostOnePath, type Invocation } from '../args.js';
import type { OptionsOf } from './options.js';
import { acquireRunLock } from '../../ports/run-lock.js';
import { beforeFirstChange } from '../../trust/admitted.js';
import { createRuntime, createStepContext, loadSite, type Runtime } from '../runtime.js';
import type { CommandResult } from './result.js';

export async function runCommand(inv: Invocation<OptionsOf<'run'>>): Promise<CommandResult> {
  const selected = selectSteps(STEPS, inv.flags.only, inv.flags.skip);
  const rt = createRuntime(inv.flags);
  // before discovery: a second run must not mount the stick, read the state or touch the network
  const lock = await acquireRunLock(rt.fs, rt.stateDir).catch(async (err: unknown) => {
    rt.log.error({ err }, 'run refused: the run lock could not be taken');
    await rt.banner.show(`REFUSED: ${(err as Error).message}`);
    throw err;
  });
  try {
    return await runLocked(inv, rt, selected);
  } finally {
    await lock.release();
  }
}

async function runLocked(
  inv: Invocation<OptionsOf<'run'>>,
  rt: Runtime,
  selected: ReturnType<typeof selectSteps>,
): Promise<CommandResult> {
  // a site-config refused at admission (signature, CA, clock) or invalid is a run counted all the same
  const loaded = await loadSite(rt, atMostOnePath('run', inv.positionals)).catch(async (err: unknown) => {
    await new SliStore(rt.fs, rt.stateDir)
      .notAdmitted(rt.clock.now(), err)
      .catch((e: unknown) => rt.log.warn({ err: e }, `relocation figures not recorded: ${errorMessage(e)}`));
    throw err;
  });
  if (!loaded) {
    const unfinished = await unfinishedRun(new StateStore(rt.fs, rt.stateDir)).catch(async (err: unknown) => {
      // a damaged state file says nothing of how far a run got: the node may be half way
      const message = `no site-config appeared, and ${errorMessage(err)}`;
      logEvent(rt.log, 'error', 'runRefused', { err }, `run refused: ${message}`);
      await rt.banner.show(`REFUSED: ${message}`);
      throw err;
    });
    if (unfinished) {
      rt.log.warn({ site: unfinished.site, done: unfinished.done, remaining: unfinished.remaining }, unfinished.line);
      await rt.banner.show(unfinished.line);
      return { exitCode: 0, stdout: '' };
    }
    rt.log.warn('no site-config appeared: nothing to do');
    await rt.banner.show('no site-config appeared; nothing was changed (plug in the stick to start)');
    return { exitCode: 0, stdout: '' };
  }
  await beforeFirstChange(rt, loaded);
  const { ctx, close } = createStepContext(rt, loaded, {
    healthTimeoutSeconds: inv.flags['health-timeout'],
    healthStableSeconds: inv.flags['health-stable'],
  });
  try {
    // a new site's node steps are about to change the node: from here until they pass, a boot
    // (a power cut) leaves kubelet shut rather than starting it on half the old site's settings
    if (STEPS.some((s) => s.group === 'node' && selected.has(s.name))) {
      if (await closeGateUnlessFor(rt.fs, rt.stateDir, ctx.configHash))
        logEvent(
          rt.log,
          'info',
          'kubeletGateClosed',
          { site: loaded.site.name },
          `kubelet gate closed until the node steps of site ${loaded.site.name} pass`,
        );
    }
    const hold = holdPoints(rt.fs, rt.log);
    const state = await runSteps({
      steps: STEPS,
      selected,
      ctx,
      hold,
      store: new StateStore(rt.fs, rt.stateDir, hold),
      sli: new SliStore(rt.fs, rt.stateDir),
      banner: rt.banner,
      configHash: ctx.configHash,
      // the hub reads the run's progress from the cluster's SiteRelocation; a run of node steps
      // only does not wait for an API it will not use
      ...(STEPS.some((s) => s.group === 'cluster' && selected.has(s.name)) && {
        observer: hubObserver(
          { ...rt, ...(loaded.site.imageBased && { imageBased: loaded.site.imageBased }) },
          ctx.kube,
        ),
      }),
    }).catch(async (err: unknown) => {
      await sayKubeletHeld(rt, ctx.configHash);
      throw err;
    });
    return { exitCode: 0, stdout: `site ${state.site}: ${state.result}\n` };
  } finally {
    close();
  }
}

/**
 * A run that stopped with kubelet still held: the console's last line and the journal say why and
 * what to do, since no alert can while kubelet is down.
 */
async function sayKubeletHeld(rt: Runtime, configHash: string): Promise<void> {
  if ((await gateOpenFor(rt.fs, rt.stateDir)) === configHash) return;
  const line = kubeletHeldLine(await new StateStore(rt.fs, rt.stateDir).load().catch(() => undefined));
  rt.log.warn(line);
  await rt.banner.show(line);
}

/**
 * A run that stopped short (a power cut, a failed step) and now finds no stick: the node is half
 * way, so say which steps are done and which remain, never "nothing was changed".
 */
async function unfinishedRun(
  store: StateStore,
): Promise<{ site: string; done: string[]; remaining: string[]; line: string } | undefined> {
  const state = await store.load();
  if (!state || state.result === 'succeeded') return undefined;
  const done = STEPS.filter((s) => state.steps[s.name]?.status === 'done').map((s) => s.name);
  if (done.length === 0) return undefined;
  const remaining = STEPS.filter((s) => state.steps[s.name]?.status !== 'done').map((s) => s.name);
  const line =
    `no site-config appeared; the run for site ${state.site} is unfinished: done ${done.join(', ')}; ` +
    `remaining ${remaining.join(', ')} (plug the stick in again to finish)`;
  return { site: state.site, done, remaining, line };
}
