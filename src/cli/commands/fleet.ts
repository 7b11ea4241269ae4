import { UsageError } from '../../base/errors.js';
import { fleetStatus, kubeconfigsIn, renderFleetStatus } from '../../fleet/status.js';
import { type Invocation, oneOf } from '../args.js';
import type { OptionsOf } from './options.js';
import { createRuntime } from '../runtime.js';
import type { CommandResult } from './result.js';

/** `fleet status --kubeconfigs DIR [--concurrency N] [--timeout SECONDS] [-o json]` */
export async function fleetCommand(inv: Invocation<OptionsOf<'fleet status'>>): Promise<CommandResult> {
  const [sub, ...rest] = inv.positionals;
  if (sub !== 'status' || rest.length > 0) throw new UsageError('usage: sno-relocate fleet status --kubeconfigs DIR');
  const dir = inv.flags.kubeconfigs;
  if (!dir) throw new UsageError('fleet status needs --kubeconfigs DIR (one kubeconfig file per cluster)');
  const format = oneOf('-o', inv.flags.output, ['text', 'json'] as const, 'text');
  const files = await kubeconfigsIn(dir).catch((err: NodeJS.ErrnoException) => {
    throw new UsageError(`--kubeconfigs: cannot read ${dir}: ${err.code ?? err.message}`);
  });
  // each site's API outages go to stderr as the agent's go to its journal; stdout stays the table
  const { log } = createRuntime({});
  const lines = await fleetStatus(files, {
    concurrency: inv.flags.concurrency,
    timeoutMs: inv.flags.timeout * 1000,
    log,
  });
  return {
    exitCode: 0,
    stdout: format === 'json' ? `${JSON.stringify({ clusters: lines }, null, 2)}\n` : renderFleetStatus(lines),
  };
}
