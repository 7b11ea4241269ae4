/**
 * `fleet status`: the SiteRelocation of many clusters, read concurrently through a bounded pool,
 * each request with its own deadline, so a slow site costs at most its timeout and a stopped one
 * shows as unreachable instead of holding the rest up.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { ApiException, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import pLimit from 'p-limit';
import { errorMessage } from '../base/errors.js';
import { REPORT_GROUP, REPORT_NAME, REPORT_PLURAL, REPORT_VERSION, type ReportStatus } from '../hub/report.js';
import { timeoutConfiguration } from '../kube/transport.js';

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
}

/** The kubeconfig files of a folder, one per cluster, in name order. */
export async function kubeconfigsIn(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && !e.name.startsWith('.'))
    .map((e) => path.join(dir, e.name))
    .sort();
}

export async function readSite(file: string, timeoutMs: number): Promise<SiteLine> {
  const name = path.basename(file).replace(/\.(ya?ml|kubeconfig|conf)$/, '');
  const started = performance.now();
  const done = (line: Omit<SiteLine, 'name' | 'durationMs'>): SiteLine => ({
    name,
    ...line,
    durationMs: Math.round(performance.now() - started),
  });
  try {
    const config = new KubeConfig();
    config.loadFromFile(file);
    const api = new CustomObjectsApi(timeoutConfiguration(config, timeoutMs));
    const obj = (await api.getClusterCustomObject({
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
    if (err instanceof ApiException && err.code === 404) return done({ state: 'no report' });
    const reason = err instanceof ApiException ? `HTTP ${err.code}` : errorMessage(err);
    return done({ state: 'unreachable', error: reason.split('\n')[0]! });
  }
}

export async function fleetStatus(files: readonly string[], options: FleetStatusOptions): Promise<SiteLine[]> {
  const limit = pLimit(options.concurrency);
  return Promise.all(files.map((file) => limit(() => readSite(file, options.timeoutMs))));
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
