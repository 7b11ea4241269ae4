/**
 * The Prometheus text endpoint: findings by component and severity, the overall health, the last
 * full sync and sync errors, and the relocation SLIs the agent left in the state folder
 * (relocation-metrics.ts). It holds nothing secret; the unit serves it on every address and lets
 * only loopback and the pod network in, where the platform Prometheus scrapes it through the
 * Endpoints the watcher keeps (scrape-endpoints.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Registry } from 'prom-client';
import { UsageError } from '../base/errors.js';
import { COMPONENTS, SEVERITIES, type Finding, type Health } from './model.js';
import { registerRelocationMetrics, type RelocationSource } from './relocation-metrics.js';

const HEALTH_VALUE: Record<Health, number> = { unknown: -1, healthy: 0, degraded: 1, unhealthy: 2 };

export interface MetricsEndpoint {
  /** http://host:port/metrics */
  url: string;
  update(health: Health, findings: readonly Finding[]): void;
  synced(at: Date): void;
  syncError(resource: string): void;
  close(): Promise<void>;
}

export function parseListenAddress(value: string): { host: string; port: number } {
  const match = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) throw new UsageError(`--metrics-address: "${value}" is not HOST:PORT`);
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}

export async function serveMetrics(address: string, relocation?: RelocationSource): Promise<MetricsEndpoint> {
  const { host, port } = parseListenAddress(address);
  const registry = new Registry();
  if (relocation) registerRelocationMetrics(registry, relocation);
  const findings = new Gauge({
    name: 'sno_relocate_watch_findings',
    help: 'Current watcher findings',
    labelNames: ['component', 'severity'] as const,
    registers: [registry],
  });
  const health = new Gauge({
    name: 'sno_relocate_watch_health',
    help: 'Overall health: -1 unknown, 0 healthy, 1 degraded, 2 unhealthy',
    registers: [registry],
  });
  const lastSync = new Gauge({
    name: 'sno_relocate_watch_last_sync_timestamp_seconds',
    help: 'When a watched resource was last listed in full',
    registers: [registry],
  });
  const syncErrors = new Counter({
    name: 'sno_relocate_watch_sync_errors_total',
    help: 'Failed lists and watches',
    labelNames: ['resource'] as const,
    registers: [registry],
  });
  health.set(HEALTH_VALUE.unknown);

  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url !== '/metrics' && req.url !== '/')) {
      res.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new UsageError(`--metrics-address ${address}: ${err.message}`)));
    server.listen(port, host, resolve);
  });
  const bound = server.address() as AddressInfo;
  return {
    url: `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}/metrics`,
    update(now, list) {
      health.set(HEALTH_VALUE[now]);
      for (const component of COMPONENTS) {
        for (const severity of SEVERITIES)
          findings.set(
            { component, severity },
            list.filter((f) => f.component === component && f.severity === severity).length,
          );
      }
    },
    synced: (at) => lastSync.set(at.getTime() / 1000),
    syncError: (resource) => syncErrors.inc({ resource }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
