/**
 * The relocation SLIs and the alert rules on them, checked by Prometheus's own promtool (Debian's
 * prometheus package, installed by scripts/test.sh): the watcher's exposition passes
 * `promtool check metrics`, the shipped PrometheusRule's groups pass `promtool check rules`, and
 * `promtool test rules` sees each alert fire on its symptom and stay quiet otherwise. The rules
 * name only series the watcher serves, each alert has its runbook in the README, and the manifest
 * is one the agent accepts as an extra manifest.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RolledBackError } from '../../src/base/errors.js';
import { AGENT_VERSION } from '../../src/base/version.js';
import type { Finding } from '../../src/base/findings.js';
import { readExtraManifests } from '../../src/config/extra-manifests.js';
import { SliStore } from '../../src/engine/sli.js';
import { openGate } from '../../src/node/kubelet-gate.js';
import { createRootFs } from '../../src/ports/fs.js';
import { serveMetrics, type MetricsEndpoint } from '../../src/watch/metrics.js';

const REPO = path.resolve(import.meta.dirname, '../..');
const RULES = path.join(REPO, 'monitoring/sno-relocate-rules.yaml');
const RULE_TESTS = path.join(REPO, 'monitoring/sno-relocate-rules.test.yaml');
const STATE_DIR = '/var/lib/sno-relocate';

interface Rule {
  alert: string;
  expr: string;
}
const ruleDocs = () => yaml.loadAll(readFileSync(RULES, 'utf8')) as { kind: string; spec?: { groups: unknown[] } }[];
const groups = () => ruleDocs().find((d) => d.kind === 'PrometheusRule')!.spec!.groups as { rules: Rule[] }[];

function promtool(args: string[], input?: string): { code: number | null; out: string } {
  const r = spawnSync('promtool', args, { encoding: 'utf8', ...(input !== undefined && { input }) });
  if (r.error) throw new Error(`promtool: ${r.error.message} (scripts/test.sh installs Debian's prometheus package)`);
  return { code: r.status, out: r.stdout + r.stderr };
}

let work: string;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'monitoring-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the relocation metrics the watcher serves', () => {
  let endpoint: MetricsEndpoint;
  let text: string;
  beforeAll(async () => {
    const root = path.join(work, 'node');
    const fs = createRootFs(root);
    // what two runs leave: one rolled back its network, the next succeeded; then the gate opened
    const sli = new SliStore(fs, STATE_DIR);
    const t0 = Date.parse('2026-11-26T08:00:00Z');
    await sli.started(new Date(t0));
    await sli.finished({
      result: 'failed',
      startedAt: new Date(t0),
      finishedAt: new Date(t0 + 95_000),
      durationSeconds: 95,
      err: new RolledBackError('network: checks failed; rolled back', { step: 'network' }),
    });
    await sli.started(new Date(t0 + 600_000));
    await sli.finished({
      result: 'succeeded',
      startedAt: new Date(t0 + 600_000),
      finishedAt: new Date(t0 + 1_200_000),
      durationSeconds: 600,
      state: {
        version: 2,
        site: 'store-0042',
        configHash: 'h',
        result: 'succeeded',
        startedAt: new Date(t0 + 600_000).toISOString(),
        steps: {
          network: {
            status: 'done',
            inputHash: 'n',
            attempts: 2,
            startedAt: new Date(t0 + 600_000).toISOString(),
            finishedAt: new Date(t0 + 690_000).toISOString(),
            durationMs: 90_000,
          },
        },
      },
    });
    await openGate(fs, STATE_DIR, 'h');
    endpoint = await serveMetrics('127.0.0.1:0', { fs, stateDir: STATE_DIR });
    endpoint.update('degraded', [
      { component: 'olm', object: 'Subscription x', severity: 'error', reason: 'stuck' } as never,
    ]);
    text = await (await fetch(endpoint.url)).text();
  });
  afterAll(() => endpoint.close());

  it('pass promtool check metrics: units in names, _total counters, help on every family', () => {
    const r = promtool(['check', 'metrics'], text);
    expect(r.out).toBe('');
    expect(r.code).toBe(0);
  });

  it('say what the runs did: results, the failed step and its reason class, rollbacks, durations, the gate', () => {
    const samples = [
      'sno_relocate_runs_total{result="succeeded"} 1',
      'sno_relocate_runs_total{result="failed"} 1',
      'sno_relocate_step_failures_total{step="network",reason="rollback"} 1',
      'sno_relocate_network_rollbacks_total 1',
      `sno_relocate_last_success_timestamp_seconds ${Date.parse('2026-11-26T08:20:00Z') / 1000}`,
      'sno_relocate_last_run_success 1',
      'sno_relocate_run_in_progress 0',
      'sno_relocate_run_duration_seconds 600',
      'sno_relocate_step_duration_seconds{step="network"} 90',
      'sno_relocate_kubelet_gate_open 1',
      `sno_relocate_build_info{version="${AGENT_VERSION}"} 1`,
      'sno_relocate_watch_findings{component="olm",severity="error"} 1',
    ];
    for (const line of samples) expect(text.split('\n')).toContain(line);
  });

  it('carry every series the alert rules name', () => {
    const named = new Set(groups().flatMap((g) => g.rules.flatMap((r) => r.expr.match(/sno_relocate_\w+/g) ?? [])));
    expect(named.size).toBeGreaterThanOrEqual(4);
    for (const name of named) expect(text).toMatch(new RegExp(`^${name}[{ ]`, 'm'));
  });
});

describe('the alert rules', () => {
  it('are a PrometheusRule (and its namespace) the agent accepts as extra manifests', async () => {
    const site = path.join(work, 'site');
    mkdirSync(path.join(site, 'extra-manifests'), { recursive: true });
    copyFileSync(RULES, path.join(site, 'extra-manifests/50-sno-relocate-rules.yaml'));
    const findings: Finding[] = [];
    const manifests = await readExtraManifests(
      { realDir: site, read: async (_field, name) => readFileSync(path.join(site, name)) },
      findings,
    );
    expect(findings).toEqual([]);
    expect(manifests.map((m) => `${m.object.kind}/${m.object.metadata.name}`)).toEqual([
      'Namespace/sno-relocate',
      'PrometheusRule/sno-relocate',
    ]);
  });

  it('pass promtool check rules, and promtool test rules sees each alert fire and stay quiet', () => {
    const dir = path.join(work, 'rules');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'rules.yaml'), yaml.dump({ groups: groups() }));
    copyFileSync(RULE_TESTS, path.join(dir, 'tests.yaml'));
    const check = promtool(['check', 'rules', path.join(dir, 'rules.yaml')]);
    expect(check.out).toContain('SUCCESS: 4 rules found');
    expect(check.code).toBe(0);
    const tested = promtool(['test', 'rules', path.join(dir, 'tests.yaml')]);
    expect(tested.out).toContain('SUCCESS');
    expect(tested.code).toBe(0);
    // every alert is tested both ways
    const tests = readFileSync(RULE_TESTS, 'utf8');
    for (const { alert } of groups().flatMap((g) => g.rules)) {
      expect(tests).toMatch(new RegExp(`alertname: ${alert}\\n\\s+exp_alerts: \\[\\]`));
      expect(tests).toMatch(new RegExp(`alertname: ${alert}\\n\\s+exp_alerts:\\n`));
    }
  });

  it('have each a runbook section in the README', () => {
    const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
    for (const { alert } of groups().flatMap((g) => g.rules))
      expect(readme).toMatch(new RegExp(`^#+ Runbook: ${alert}$`, 'm'));
  });
});
