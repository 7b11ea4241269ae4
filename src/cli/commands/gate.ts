/**
 * `sno-relocate gate`: run by sno-relocate-gate.service before kubelet at every boot. When a
 * trusted site-config is waiting whose node steps have not passed (a second stick), it closes the
 * kubelet gate, so kubelet does not start on the old site's network and names; the agent's run
 * opens it again once the node steps passed. With no site-config, or one that is invalid or
 * untrusted (a random stick must not keep kubelet down), the gate stays as it is. Always exits 0
 * for a site-config problem: the agent's run reports those.
 */
import { errorMessage, UsageError } from '../../base/errors.js';
import { hashOf } from '../../engine/state.js';
import { logEvent } from '../../log/logger.js';
import { closeGateUnlessFor, gateOpenFor } from '../../node/kubelet-gate.js';
import { atMostOnePath, type Invocation } from '../args.js';
import type { OptionsOf } from './options.js';
import { createRuntime, loadSite } from '../runtime.js';
import type { CommandResult } from './result.js';

export async function gateCommand(inv: Invocation<OptionsOf<'gate'>>): Promise<CommandResult> {
  const rt = createRuntime(inv.flags);
  const target = atMostOnePath('gate', inv.positionals);
  let loaded;
  try {
    loaded = await loadSite(rt, target);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const message = `kubelet gate left as it is: the site-config found cannot be used (${errorMessage(err)})`;
    rt.log.warn(message);
    return { exitCode: 0, stdout: `${message}\n` };
  }
  const openFor = await gateOpenFor(rt.fs, rt.stateDir);
  if (!loaded) {
    const message = `no site-config waiting; kubelet gate left ${openFor === undefined ? 'closed' : 'open'}`;
    rt.log.info(message);
    return { exitCode: 0, stdout: `${message}\n` };
  }
  if (await closeGateUnlessFor(rt.fs, rt.stateDir, hashOf(loaded.files))) {
    const message = `kubelet gate closed: site-config ${loaded.site.name} waits for its node steps`;
    logEvent(rt.log, 'warn', 'kubeletGateClosed', { site: loaded.site.name }, message);
    await rt.banner.show(`site-config ${loaded.site.name} found; kubelet waits for the node steps`);
    return { exitCode: 0, stdout: `${message}\n` };
  }
  const message =
    openFor === undefined
      ? `kubelet gate closed until the node steps of site-config ${loaded.site.name} pass`
      : `kubelet gate open: site-config ${loaded.site.name} is the one whose node steps passed`;
  rt.log.info(message);
  return { exitCode: 0, stdout: `${message}\n` };
}
