/**
 * A real Prometheus (Debian's prometheus package) for the alert tests: started on a free loopback
 * port with the scrape configurations given and the groups of the shipped PrometheusRule, each
 * `for` cut to 2 s (their durations are held by `promtool test rules`, monitoring.test.ts), and
 * the API calls the tests watch alerts through.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { expect } from 'vitest';
import { CommandError } from '../../src/base/errors.js';
import type { SliStore } from '../../src/engine/sli.js';
import { freeTcpPort } from '../helpers/ports.js';

export const REPO = path.resolve(import.meta.dirname, '../..');
const RULES = path.join(REPO, 'monitoring/sno-relocate-rules.yaml');

/** the groups of the shipped PrometheusRule, as the Prometheus Operator hands them to Prometheus */
function shippedGroups(): unknown[] {
  const docs = yaml.loadAll(readFileSync(RULES, 'utf8')) as { kind: string; spec?: { groups: unknown[] } }[];
  const groups = docs.find((d) => d.kind === 'PrometheusRule')!.spec!.groups as { rules: { for?: string }[] }[];
  return groups.map((g) => ({ ...g, rules: g.rules.map((r) => (r.for ? { ...r, for: '2s' } : r)) }));
}

export interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: string;
}

export interface PrometheusServer {
  /** http://127.0.0.1:PORT */
  api: string;
  /** waits, polling, until `check` holds; a deadline names what was awaited and Prometheus's log */
  until(what: string, check: () => Promise<boolean>, ms?: number): Promise<void>;
  alerts(): Promise<Alert[]>;
  /** the alert fires while the symptom lasts, and is gone once it clears */
  firesAndClears(name: string, symptom: () => Promise<void>, clear: () => Promise<void>): Promise<Alert>;
  stop(): void;
}

export async function startPrometheus(work: string, scrapeConfigs: unknown[]): Promise<PrometheusServer> {
  writeFileSync(path.join(work, 'rules.yaml'), yaml.dump({ groups: shippedGroups() }));
  writeFileSync(
    path.join(work, 'prometheus.yml'),
    yaml.dump({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [path.join(work, 'rules.yaml')],
      scrape_configs: scrapeConfigs,
    }),
  );
  const api = `http://127.0.0.1:${await freeTcpPort()}`;
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${path.join(work, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(work, 'tsdb')}`,
      `--web.listen-address=${new URL(api).host}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (log += c));
  const until = async (what: string, check: () => Promise<boolean>, ms = 45_000) => {
    const deadline = performance.now() + ms;
    while (!(await check())) {
      if (performance.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s\n${log.slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  const alerts = async () =>
    ((await (await fetch(`${api}/api/v1/alerts`)).json()) as { data: { alerts: Alert[] } }).data.alerts;
  const firing = async (name: string) =>
    (await alerts()).find((a) => a.labels.alertname === name && a.state === 'firing');
  const quiet = async (name: string) => !(await alerts()).some((a) => a.labels.alertname === name);
  await until('Prometheus ready', async () => (await fetch(`${api}/-/ready`).catch(() => undefined))?.ok === true);
  return {
    api,
    until,
    alerts,
    async firesAndClears(name, symptom, clear) {
      expect(await quiet(name)).toBe(true);
      await symptom();
      let seen: Alert | undefined;
      await until(`${name} firing`, async () => (seen = await firing(name)) !== undefined);
      await clear();
      await until(`${name} cleared`, () => quiet(name));
      return seen!;
    },
    stop: () => void child.kill(),
  };
}

/** What fires SnoRelocateRunFailed and what clears it: a run that failed in a step, then one that succeeded. */
export function failedThenSucceeded(sli: SliStore): { fail: () => Promise<void>; recover: () => Promise<void> } {
  return {
    async fail() {
      const at = new Date();
      await sli.started(at);
      await sli.finished({
        result: 'failed',
        startedAt: at,
        finishedAt: at,
        durationSeconds: 1,
        err: new CommandError('nmstatectl apply failed', 'nmstatectl', 1, '', { step: 'network' }),
      });
    },
    async recover() {
      const at = new Date();
      await sli.finished({ result: 'succeeded', startedAt: at, finishedAt: at, durationSeconds: 1 });
    },
  };
}
