/**
 * The relocation SLIs, served by the watcher: the agent is a oneshot and leaves its figures in the
 * state folder (engine/sli.ts); they are read again at every scrape, so a run that just ended shows
 * at once. The kubelet gate's state is read from its marker. Label values come from short fixed
 * lists (results, steps, reason classes): the series stay few. The alert rules built on them are
 * monitoring/sno-relocate-rules.yaml.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { AGENT_VERSION } from '../base/version.js';
import { SliStore, type Sli } from '../engine/sli.js';
import { gateOpenFor } from '../node/kubelet-gate.js';
import type { RootFs } from '../ports/fs.js';

export interface RelocationSource {
  fs: RootFs;
  stateDir: string;
}

const seconds = (iso: string): number => Date.parse(iso) / 1000;

export function registerRelocationMetrics(registry: Registry, { fs, stateDir }: RelocationSource): void {
  const store = new SliStore(fs, stateDir);
  /** one read of the file per scrape, shared by every metric below */
  let pending: Promise<Sli | undefined> | undefined;
  const figures = (): Promise<Sli | undefined> => {
    pending ??= store
      .load()
      .catch(() => undefined)
      .finally(() => setImmediate(() => (pending = undefined)));
    return pending;
  };
  const registers = [registry];

  new Gauge({
    name: 'sno_relocate_build_info',
    help: 'The running sno-relocate version, always 1',
    labelNames: ['version'] as const,
    registers,
  }).set({ version: AGENT_VERSION }, 1);

  new Counter({
    name: 'sno_relocate_runs_total',
    help: 'Relocation runs finished, by result',
    labelNames: ['result'] as const,
    registers,
    async collect() {
      const sli = await figures();
      this.reset();
      if (sli) for (const [result, n] of Object.entries(sli.runs)) this.inc({ result }, n);
    },
  });
  new Counter({
    name: 'sno_relocate_step_failures_total',
    help: 'Runs that did not succeed, by where they stopped (a step, preflight or admission) and the class of reason',
    labelNames: ['step', 'reason'] as const,
    registers,
    async collect() {
      const sli = await figures();
      this.reset();
      for (const [step, reasons] of Object.entries(sli?.stepFailures ?? {}))
        for (const [reason, n] of Object.entries(reasons)) this.inc({ step, reason }, n);
    },
  });
  new Counter({
    name: 'sno_relocate_network_rollbacks_total',
    help: 'Site networks rolled back because their checks failed',
    registers,
    async collect() {
      const sli = await figures();
      this.reset();
      this.inc(sli?.networkRollbacks ?? 0);
    },
  });
  new Gauge({
    name: 'sno_relocate_last_success_timestamp_seconds',
    help: 'When the last successful relocation run finished',
    registers,
    async collect() {
      const at = (await figures())?.lastSuccessAt;
      this.reset();
      if (at) this.set(seconds(at));
    },
  });
  new Gauge({
    name: 'sno_relocate_last_run_success',
    help: 'Whether the last finished relocation run succeeded (1) or failed or was refused (0)',
    registers,
    async collect() {
      const last = (await figures())?.lastRun;
      this.reset();
      if (last) this.set(last.result === 'succeeded' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'sno_relocate_run_in_progress',
    help: 'Whether a relocation run is going on (1) or not (0)',
    registers,
    async collect() {
      this.set((await figures())?.running ? 1 : 0);
    },
  });
  new Gauge({
    name: 'sno_relocate_run_start_timestamp_seconds',
    help: 'When the relocation run going on, or else the last one, started',
    registers,
    async collect() {
      const sli = await figures();
      const at = sli?.running?.startedAt ?? sli?.lastRun?.startedAt;
      this.reset();
      if (at) this.set(seconds(at));
    },
  });
  new Gauge({
    name: 'sno_relocate_run_duration_seconds',
    help: 'How long the last finished relocation run took',
    registers,
    async collect() {
      const last = (await figures())?.lastRun;
      this.reset();
      if (last) this.set(last.durationSeconds);
    },
  });
  new Gauge({
    name: 'sno_relocate_step_duration_seconds',
    help: 'How long each step of the last finished relocation run took',
    labelNames: ['step'] as const,
    registers,
    async collect() {
      const last = (await figures())?.lastRun;
      this.reset();
      for (const [step, s] of Object.entries(last?.steps ?? {})) this.set({ step }, s);
    },
  });
  new Gauge({
    name: 'sno_relocate_kubelet_gate_open',
    help: 'Whether the kubelet gate is open (1: kubelet may start) or closed (0)',
    registers,
    async collect() {
      this.set((await gateOpenFor(fs, stateDir).catch(() => undefined)) === undefined ? 0 : 1);
    },
  });
}
