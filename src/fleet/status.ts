/**
 * `fleet status`: the SiteRelocation of many clusters, read concurrently through a bounded pool,
 * each request with its own deadline, so a slow site costs at most its timeout and a stopped one
 * shows as unreachable instead of holding the rest up.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import pLimit from 'p-limit';
import { REPORT_GROUP, REPORT_NAME, REPORT_PLURAL, REPORT_VERSION, type ReportStatus } from '../hub/report.js';
import { surelyUnserved } from '../kube/discovery.js';
import { describeFailure, isNotFound, isTransient, isUnserved, outageLines } from '../kube/retry.js';
import { RequestTimeoutError, timeoutConfiguration } from '../kube/transport.js';
import type { Logger } from '../log/logger.js';

export interface SiteLine {
  /** the kubeconfig file's name, without its extension */
  name: string;
  state: 'reported' | 'no report' | 'unreachable';
  status?: Pick<ReportStatus, 'site' | 'phase' | 'currentStep' | 'watcherErrorCount' | 'updatedAt' | 'message'>;
  error?: string;
  durationMs: number;
}

export interface FleetStatusOptions {
  concurrency: number;
  timeoutMs: number;
  /** where each site's outages are said, as the agent says its own */
  log: Logger;
}

/** The kubeconfig files of a folder, one per cluster, in name order. */
export async function kubeconfigsIn(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && !e.name.startsWith('.'))
    .map((e) => path.join(dir, e.name))
    .sort();
}

/**
 * One site's report, retried within the site's timeout while its API is away: a refused connection,
 * a 503, or a 404 for a path not served yet (an API server that has just started). "No report" is
 * an answer: a NotFound for the object, or an API that is ready and does not serve the kind at all
 * (the agent has not installed it yet). An outage is logged as the agent logs one: a warning when
 * it starts and a line when the API answers again or the site's time runs out.
 */
export async function readSite(file: string, timeoutMs: number, log: Logger): Promise<SiteLine> {
  const name = path.basename(file).replace(/\.(ya?ml|kubeconfig|conf)$/, '');
  const what = `read the SiteRelocation of ${name}`;
  const started = performance.now();
  const outage = outageLines({ monotonic: () => performance.now() }, log.child({ cluster: name }));
  const done = (line: Omit<SiteLine, 'name' | 'durationMs'>): SiteLine => {
    outage.ended(what, true);
    return { name, ...line, durationMs: Math.round(performance.now() - started) };
  };
  const unreachable = (err: unknown) => {
    outage.ended(what, false, err);
    // a request out of time names the site's bound (--timeout), not the part of it the attempt had left
    const failure = err instanceof RequestTimeoutError ? new RequestTimeoutError(err.method, err.url, timeoutMs) : err;
    return done({ state: 'unreachable', error: describeFailure(failure).split('\n')[0]! });
  };
  const config = new KubeConfig();
  try {
    config.loadFromFile(file);
  } catch (err) {
    return unreachable(err);
  }
  for (let delay = 100; ; delay = Math.min(delay * 2, 1_000)) {
    // each attempt gets what is left of the site's time
    const configuration = timeoutConfiguration(
      config,
      Math.max(1, Math.round(started + timeoutMs - performance.now())),
    );
    try {
      const obj = (await new CustomObjectsApi(configuration).getClusterCustomObject({
        group: REPORT_GROUP,
        version: REPORT_VERSION,
        plural: REPORT_PLURAL,
        name: REPORT_NAME,
      })) as { status?: ReportStatus };
      const s = obj.status;
      if (!s) return done({ state: 'no report' });
      return done({
        state: 'reported',
        status: {
          site: s.site,
          phase: s.phase,
          ...(s.currentStep !== undefined && { currentStep: s.currentStep }),
          watcherErrorCount: s.watcherErrorCount,
          updatedAt: s.updatedAt,
          ...(s.message !== undefined && { message: s.message }),
        },
      });
    } catch (err) {
      // the API answered, but has no report yet: the agent has not reached the cluster steps
      if (isNotFound(err)) return done({ state: 'no report' });
      if (isUnserved(err) && (await surelyUnserved(configuration, REPORT_GROUP, REPORT_VERSION).catch(() => false)))
        return done({ state: 'no report' });
      const left = started + timeoutMs - performance.now();
      if (!isTransient(err) || left < delay) return unreachable(err);
      outage.failed(what, err, left);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

export async function fleetStatus(files: readonly string[], options: FleetStatusOptions): Promise<SiteLine[]> {
  const limit = pLimit(options.concurrency);
  return Promise.all(files.map((file) => limit(() => readSite(file, options.timeoutMs, options.log))));
}

export function renderFleetStatus(lines: readonly SiteLine[]): string {
  const rows = [['CLUSTER', 'SITE', 'PHASE', 'STEP', 'WATCHER ERRORS', 'UPDATED / REASON']];
  for (const l of lines)
    rows.push(
      l.status
        ? [
            l.name,
            l.status.site,
            l.status.phase,
            l.status.currentStep ?? '',
            String(l.status.watcherErrorCount),
            l.status.updatedAt,
          ]
        : [l.name, '', l.state, '', '', l.error ?? 'the agent has not written its SiteRelocation yet'],
    );
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const counts = new Map<string, number>();
  for (const l of lines) {
    const key = l.status?.phase ?? l.state;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const totals = [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  return `${rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n\n${lines.length} cluster(s): ${totals}\n`;
}
