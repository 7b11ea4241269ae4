/**
 * `watch`: the companion watcher. `--once` syncs, prints the findings and exits 1 when one is an
 * error; `--replay FILE` does the same from a recording, without a cluster; otherwise it runs until
 * SIGTERM, reporting changes to the journal, the status file, the console banner and the metrics.
 */
import { ExitCode, UsageError } from '../../base/errors.js';
import type { ListWatch } from '../../ports/kube.js';
import { EMPTY_CONTEXT, type Finding, type Health, type WatchContext } from '../../watch/model.js';
import { readContextFile, siteContext } from '../../watch/context.js';
import { createRecorder, readRecording, replay, type Recorder } from '../../watch/record.js';
import { renderHealth } from '../../watch/render.js';
import { healthOf } from '../../watch/track.js';
import { atMostOnePath, type Invocation, oneOf } from '../args.js';
import type { OptionsOf } from './options.js';
import { createRuntime, kubeconfigPath, loadSite, type Runtime } from '../runtime.js';
import type { CommandResult } from './result.js';

/** how long `--once` waits for the first full list of everything watched */
export const ONCE_SYNC_TIMEOUT_MS = 60_000;

async function contextFor(rt: Runtime, sitePath: string | undefined): Promise<WatchContext> {
  if (sitePath !== undefined) {
    const loaded = await loadSite(rt, sitePath);
    if (loaded) return siteContext(rt.fs, rt.stateDir, loaded.site);
  }
  return (await readContextFile(rt.fs, rt.stateDir)) ?? EMPTY_CONTEXT;
}

function result(
  format: 'text' | 'json',
  health: Health,
  findings: Finding[],
  now: Date,
  header: string[],
): CommandResult {
  const stdout =
    format === 'json'
      ? `${JSON.stringify({ health, findings }, null, 2)}\n`
      : renderHealth(health, findings, now, header);
  return { exitCode: health === 'unhealthy' ? ExitCode.stepFailed : ExitCode.ok, stdout };
}

export async function watchCommand(inv: Invocation<OptionsOf<'watch'>>): Promise<CommandResult> {
  const format = oneOf('-o', inv.flags.output, ['text', 'json'] as const, 'text');
  const rt = createRuntime(inv.flags);
  const ctx = await contextFor(rt, atMostOnePath('watch', inv.positionals));

  if (inv.flags.replay !== undefined) {
    if (inv.flags['record-events'] !== undefined)
      throw new UsageError('--replay and --record-events cannot be used together');
    const events = await readRecording(inv.flags.replay);
    const { findings } = replay(events, ctx);
    return result(format, healthOf(findings), findings, new Date(events.at(-1)!.at), [
      `Replayed: ${inv.flags.replay} (${events.length} events)`,
    ]);
  }

  const file = await kubeconfigPath(rt);
  // the client library and the watcher load only here: the other commands never pay for them
  const [{ loadKubeConfig }, { createListWatch }, { ClusterView }] = await Promise.all([
    import('../../kube/connect.js'),
    import('../../kube/list-watch.js'),
    import('../../watch/view.js'),
  ]);
  const api = createListWatch(loadKubeConfig(file));
  const recorder = inv.flags['record-events'] !== undefined ? createRecorder(inv.flags['record-events']) : undefined;

  if (inv.flags.once) {
    const view = new ClusterView(api, { clock: rt.clock, log: rt.log, ctx, ...(recorder && { recorder }) });
    try {
      view.start();
      await view.synced(ONCE_SYNC_TIMEOUT_MS);
      const { findings } = view.evaluate();
      return result(format, healthOf(findings), findings, rt.clock.now(), [`Cluster:  ${view.server}`]);
    } finally {
      await view.stop();
    }
  }
  return watchUntilStopped(rt, api, ctx, recorder, file);
}

/** A client for the few writes the watcher makes, without waiting for the API: it may not be up yet. */
async function kubeFor(file: string, rt: Runtime) {
  const [{ loadKubeConfig }, { createKube }] = await Promise.all([
    import('../../kube/connect.js'),
    import('../../kube/client.js'),
  ]);
  return createKube(loadKubeConfig(file), rt.log);
}

async function watchUntilStopped(
  rt: Runtime,
  api: ListWatch,
  ctx: WatchContext,
  recorder: Recorder | undefined,
  kubeconfig: string,
): Promise<CommandResult> {
  const [{ ClusterView }, { Watcher }, { serveMetrics, parseListenAddress }, { interpreterOnly }, scrape] =
    await Promise.all([
      import('../../watch/view.js'),
      import('../../watch/watcher.js'),
      import('../../watch/metrics.js'),
      import('../../watch/memory.js'),
      import('../../watch/scrape-endpoints.js'),
    ]);
  // idle most of its life: its resident size matters more than the speed of its resyncs
  interpreterOnly();
  const metrics = await serveMetrics(rt.options.metricsAddress, { fs: rt.fs, stateDir: rt.stateDir });
  const view = new ClusterView(api, {
    clock: rt.clock,
    log: rt.log,
    ctx,
    ...(recorder && { recorder }),
    // events flow only after view.start(), when the watcher exists
    onChange: () => watcher.changed(),
    onSyncError: (resource) => {
      metrics.syncError(resource);
      watcher.changed();
    },
  });
  const watcher = new Watcher(view, {
    fs: rt.fs,
    stateDir: rt.stateDir,
    banner: rt.banner,
    log: rt.log,
    clock: rt.clock,
    metrics,
  });
  const stopped = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  // served beyond loopback: the platform Prometheus reaches it through the Endpoints this keeps
  const keeper = scrape.isLoopback(parseListenAddress(rt.options.metricsAddress).host)
    ? undefined
    : new scrape.EndpointsKeeper(await kubeFor(kubeconfig, rt), api, Number(new URL(metrics.url).port), rt.log);
  view.start();
  keeper?.start();
  rt.log.info({ server: view.server, metrics: metrics.url }, `watching ${view.server}; metrics at ${metrics.url}`);
  const signal = await stopped;
  rt.log.info({ signal }, `watcher stopping on ${signal}`);
  await keeper?.stop();
  await watcher.stop();
  await view.stop();
  await metrics.close();
  return { exitCode: ExitCode.ok, stdout: '' };
}
