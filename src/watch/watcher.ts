/**
 * The long-running watcher: evaluates the checks shortly after anything changes (and when a finding
 * is due to escalate), and reports only what changed: journal lines per finding, a journal line and
 * the console banner when the overall health changes, the status file and the metrics.
 */
import type { Banner } from '../engine/banner.js';
import { logEvent, type Logger } from '../log/logger.js';
import type { Clock } from '../ports/clock.js';
import type { RootFs } from '../ports/fs.js';
import { collectGarbage } from './memory.js';
import type { MetricsEndpoint } from './metrics.js';
import type { Finding, Health } from './model.js';
import { writeWatchStatus, type WatchStatus } from './status-file.js';
import { diffFindings, healthOf, summaryLine } from './track.js';
import type { ClusterView } from './view.js';

/** events within this window are evaluated together: an initial list of thousands is one evaluation */
export const SETTLE_MS = 100;
/**
 * After the initial sync, when V8 is asked to collect once more: V8 shrinks its young generation
 * (grown to tens of megabytes by the sync) only in a collection that sees a low allocation rate
 * over its last 5 s, which the one right after the sync cannot.
 */
export const QUIET_COLLECTION_MS = 10_000;

export interface WatcherOutputs {
  fs: RootFs;
  stateDir: string;
  banner: Banner;
  log: Logger;
  clock: Clock;
  metrics?: MetricsEndpoint;
}

const LEVEL = { error: 'error', warning: 'warn', info: 'info' } as const;

export class Watcher {
  private timer: NodeJS.Timeout | undefined;
  private escalation: NodeJS.Timeout | undefined;
  private quietCollection: NodeJS.Timeout | undefined;
  private findings: Finding[] = [];
  private health: Health = 'unknown';
  private everSynced = false;
  private written = '';
  private pending: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly view: ClusterView,
    private readonly out: WatcherOutputs,
  ) {}

  /** Call on every change the view reports. */
  changed(): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pending = this.pending
        .then(() => this.tick())
        .catch((err: unknown) => this.out.log.error({ err }, 'watcher: evaluation failed'));
    }, SETTLE_MS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.escalation);
    clearTimeout(this.quietCollection);
    await this.pending;
  }

  private async tick(): Promise<void> {
    const status = this.view.status();
    const firstSync = status.synced && !this.everSynced;
    if (status.synced) this.everSynced = true;
    if (status.lastSyncAt) this.out.metrics?.synced(status.lastSyncAt);
    if (this.everSynced) {
      const evaluation = this.view.evaluate();
      this.report(evaluation.findings);
      clearTimeout(this.escalation);
      if (evaluation.nextEscalationAt !== undefined) {
        this.escalation = setTimeout(
          () => this.changed(),
          Math.max(0, evaluation.nextEscalationAt - this.out.clock.now().getTime()) + 1,
        );
      }
    }
    await this.writeStatus(status);
    // what the initial sync parsed and did not keep is handed back now, not when V8 finds it idle
    if (firstSync) {
      collectGarbage();
      this.quietCollection = setTimeout(collectGarbage, QUIET_COLLECTION_MS);
    }
  }

  private report(findings: Finding[]): void {
    const { log } = this.out;
    const changes = diffFindings(this.findings, findings);
    for (const f of changes.raised)
      logEvent(
        log,
        LEVEL[f.severity],
        'watchFinding',
        { ...f, change: 'raised' },
        `${f.severity}: ${f.object}: ${f.reason}`,
      );
    for (const { finding: f, from } of changes.changed)
      logEvent(
        log,
        LEVEL[f.severity],
        'watchFinding',
        { ...f, change: 'severity', from },
        `${f.severity} (was ${from}): ${f.object}: ${f.reason}`,
      );
    for (const f of changes.cleared)
      logEvent(
        log,
        'info',
        'watchFinding',
        { component: f.component, object: f.object, reason: f.reason, change: 'cleared' },
        `cleared: ${f.object}: ${f.reason}`,
      );
    this.findings = findings;
    const health = healthOf(findings);
    this.out.metrics?.update(health, findings);
    if (health !== this.health) {
      const line = summaryLine(health, findings);
      logEvent(
        log,
        health === 'unhealthy' ? 'error' : health === 'degraded' ? 'warn' : 'info',
        'watchHealthChanged',
        { health, from: this.health },
        line,
      );
      void this.out.banner.show(line);
      this.health = health;
    }
  }

  private async writeStatus(source: ReturnType<ClusterView['status']>): Promise<void> {
    const body: Omit<WatchStatus, 'updatedAt'> = {
      version: 1,
      health: this.health,
      server: this.view.server,
      ...(source.lastSyncAt && { lastSyncAt: source.lastSyncAt.toISOString() }),
      syncErrors: source.errors,
      ...(source.lastError && { lastSyncError: source.lastError }),
      findings: this.findings,
    };
    const text = JSON.stringify(body);
    if (text === this.written) return;
    this.written = text;
    await writeWatchStatus(this.out.fs, this.out.stateDir, { ...body, updatedAt: this.out.clock.now().toISOString() });
  }
}
