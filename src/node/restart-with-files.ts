/**
 * A node service's configuration files replaced and the service restarted through systemd's D-Bus
 * API, for the steps that reconfigure one (site-names: dnsmasq; ntp: chronyd).
 *
 * Resumable: a pending-restart marker in the state folder is written before the files and removed
 * after the restart, so a run cut off between the two restarts the service the next time (the
 * steps plan that restart while the marker is there). Rolled back: when the service does not come
 * back with the new files, the previous ones are put back, the service is restarted with them and
 * the step fails, so the node keeps the service it had.
 */
import path from 'node:path';
import { errorMessage, StepError } from '../base/errors.js';
import type { StepContext } from '../engine/step.js';
import { type ManagedFile, writeManagedFile } from './managed-file.js';

const RESTART_TIMEOUT_MS = 60_000;

export interface ServiceFiles {
  step: string;
  unit: string;
  /** the pending-restart marker's name in the state folder */
  marker: string;
  /** every file the step manages for the service: those not in `files` are removed */
  paths: readonly string[];
  /** for the failure: what the service did not restart with */
  describe: string;
  /** a daemon reload before the restart, for a changed unit drop-in */
  reload?: boolean;
}

/** Whether a run changed the service's files but did not restart it. */
export function restartPending(ctx: StepContext, service: ServiceFiles): Promise<boolean> {
  return ctx.fs.exists(path.join(ctx.stateDir, service.marker));
}

async function restart(ctx: StepContext, service: ServiceFiles): Promise<string> {
  try {
    const job = await (
      await ctx.systemd()
    ).restartAndWait(service.unit, RESTART_TIMEOUT_MS, service.reload ? { reload: true } : undefined);
    return job.jobResult;
  } catch (err) {
    return errorMessage(err);
  }
}

async function putFiles(ctx: StepContext, paths: readonly string[], files: readonly ManagedFile[]): Promise<void> {
  for (const target of paths) {
    const file = files.find((f) => f.path === target);
    if (file) await writeManagedFile(ctx.fs, file);
    else await ctx.fs.remove(target);
  }
}

/** Writes `files` (removing the service's other paths), restarts the service, or puts the previous files back. */
export async function restartWithFiles(
  ctx: StepContext,
  service: ServiceFiles,
  files: readonly ManagedFile[],
): Promise<void> {
  const marker = path.join(ctx.stateDir, service.marker);
  // root-owned and world-readable, as the services' own configuration files
  const previous: ManagedFile[] = [];
  for (const target of service.paths) {
    const content = await ctx.fs.readText(target);
    if (content !== undefined) previous.push({ path: target, content, mode: 0o644, uid: 0, gid: 0 });
  }
  await ctx.fs.writeAtomic(marker, `${service.unit}\n`, { mode: 0o600 });
  await putFiles(ctx, service.paths, files);
  const result = await restart(ctx, service);
  if (result === 'done') {
    await ctx.fs.remove(marker);
    return;
  }
  await putFiles(ctx, service.paths, previous);
  const again = await restart(ctx, service);
  if (again === 'done') await ctx.fs.remove(marker);
  const daemon = service.unit.replace(/\.service$/, '');
  const [them, back] = service.paths.length > 1 ? ['them', 'files are back'] : ['it', 'file is back'];
  throw new StepError(
    `${service.step}: ${service.unit} did not restart with ${service.describe} (${result}); the previous ${back}` +
      (again === 'done'
        ? ` and ${daemon} runs with ${them}`
        : `, but ${daemon} did not restart with ${them} either (${again})`),
    { step: service.step, retryable: true },
  );
}
