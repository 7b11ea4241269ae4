/**
 * The shipped alerts fire, end to end, in a real Prometheus (Debian's prometheus package): it
 * scrapes the endpoint the watcher serves, as the platform Prometheus scrapes a ServiceMonitor's
 * target (docs/metrics-and-alerts.md), evaluates the rules of the shipped PrometheusRule, and each
 * alert is seen firing through Prometheus's HTTP API while its symptom lasts and gone once it
 * clears. The symptoms are written by the agent's own code: its run record (engine/sli.ts), the
 * kubelet gate's marker (node/kubelet-gate.ts) and the watcher's findings. Only the rules' `for`
 * is shortened to 2 s, so that a test does not wait half an hour; their durations are checked by
 * `promtool test rules` (monitoring.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SliStore } from '../../src/engine/sli.js';
import { closeGateUnlessFor, openGate } from '../../src/node/kubelet-gate.js';
import { createRootFs, type RootFs } from '../../src/ports/fs.js';
import { serveMetrics, type MetricsEndpoint } from '../../src/watch/metrics.js';
import { failedThenSucceeded, type PrometheusServer, startPrometheus } from './prometheus-server.js';

const STATE_DIR = '/var/lib/sno-relocate';

let work: string;
let fs: RootFs;
let sli: SliStore;
let endpoint: MetricsEndpoint;
let prometheus: PrometheusServer;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'prometheus-'));
  fs = createRootFs(path.join(work, 'node'));
  sli = new SliStore(fs, STATE_DIR);
  // a node that relocated once, its gate open: no alert yet
  const t0 = new Date(Date.now() - 3_600_000);
  await sli.started(t0);
  await sli.finished({ result: 'succeeded', startedAt: t0, finishedAt: t0, durationSeconds: 600 });
  await openGate(fs, STATE_DIR, 'site-hash');
  endpoint = await serveMetrics('127.0.0.1:0', { fs, stateDir: STATE_DIR });
  endpoint.update('healthy', []);
  prometheus = await startPrometheus(work, [
    {
      // the job and target labels the Prometheus Operator gives a ServiceMonitor's endpoint
      job_name: 'serviceMonitor/sno-relocate/sno-relocate-watch/0',
      static_configs: [
        {
          targets: [new URL(endpoint.url).host],
          labels: { namespace: 'sno-relocate', service: 'sno-relocate-watch', job: 'sno-relocate-watch' },
        },
      ],
    },
  ]);
}, 60_000);

afterAll(async () => {
  prometheus?.stop();
  await endpoint?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const firesAndClears: PrometheusServer['firesAndClears'] = (...args) => prometheus.firesAndClears(...args);

describe('the shipped alerts, in a real Prometheus', () => {
  it('SnoRelocateRunFailed fires on a failed run and clears on the next success', async () => {
    const run = failedThenSucceeded(sli);
    const alert = await firesAndClears('SnoRelocateRunFailed', run.fail, run.recover);
    expect(alert.labels).toMatchObject({ severity: 'critical', namespace: 'sno-relocate' });
    expect(alert.annotations.runbook).toContain('Runbook: SnoRelocateRunFailed');
  });

  it('SnoRelocateRunOverBudget fires on a run going on for more than 90 minutes, and clears when it ends', async () => {
    const began = new Date(Date.now() - 91 * 60_000);
    await firesAndClears(
      'SnoRelocateRunOverBudget',
      () => sli.started(began),
      () => sli.finished({ result: 'succeeded', startedAt: began, finishedAt: new Date(), durationSeconds: 5460 }),
    );
  });

  it('SnoRelocateWatcherError fires on an error finding, per component, and clears when it goes', async () => {
    const alert = await firesAndClears(
      'SnoRelocateWatcherError',
      async () =>
        endpoint.update('unhealthy', [
          {
            component: 'olm',
            object: 'CatalogSource/redhat-operators',
            severity: 'error',
            reason: 'TRANSIENT_FAILURE',
          },
        ]),
      async () => endpoint.update('healthy', []),
    );
    expect(alert.labels.component).toBe('olm');
  });

  it('SnoRelocateKubeletGateClosed fires while the gate is closed, and clears when the node steps open it', async () => {
    await firesAndClears(
      'SnoRelocateKubeletGateClosed',
      async () => void (await closeGateUnlessFor(fs, STATE_DIR, 'next-site-hash')),
      () => openGate(fs, STATE_DIR, 'next-site-hash'),
    );
  });
});
