/**
 * [kubelet] The gate (src/node/kubelet-gate.ts): kubelet stays enabled as OpenShift renders it,
 * and a drop-in of the factory MachineConfig lets it start only while the gate marker exists. The
 * run stops at the first node step that fails, so this step runs only once every node step before
 * it has succeeded: it writes the marker for this site-config and starts kubelet over systemd's
 * D-Bus API, never enabling or disabling it (the machine-config daemon owns its enablement). The
 * start job's result decides: a job that does not end in "done" fails the step with the unit's
 * state and the last lines of its journal.
 */
import { errorMessage, StepError, VerificationError } from '../base/errors.js';
import type { Step, StepContext } from './step.js';
import { KUBELET_START_TIMEOUT_SECONDS } from '../base/timeouts.js';
import type { Change } from '../engine/step.js';
import { logEvent } from '../log/logger.js';
import { gateOpenFor, gatePath, openGate } from '../node/kubelet-gate.js';
import type { UnitStatus } from '../ports/systemd.js';

export const KUBELET_UNIT = 'kubelet.service';
const START_TIMEOUT_MS = KUBELET_START_TIMEOUT_SECONDS * 1000;
const JOURNAL_LINES = 20;

const describeStatus = (s: UnitStatus) =>
  `ActiveState=${s.activeState} SubState=${s.subState} Result=${s.result} UnitFileState=${s.unitFileState}`;

async function journalTail(ctx: StepContext): Promise<string> {
  try {
    const { code, stdout, stderr } = await ctx.exec.run(
      'journalctl',
      ['-u', 'kubelet', '-n', String(JOURNAL_LINES), '--no-pager'],
      {
        allowFailure: true,
        timeoutMs: 15_000,
      },
    );
    const text = (code === 0 ? stdout : `${stdout}${stderr}`).trim();
    return text || '(no journal lines)';
  } catch (err) {
    return `(journal unavailable: ${errorMessage(err)})`;
  }
}

async function failure(ctx: StepContext, what: string, cause?: unknown): Promise<StepError> {
  let state: string;
  let fields: Partial<UnitStatus> = {};
  try {
    fields = await (await ctx.systemd()).unitStatus(KUBELET_UNIT);
    state = describeStatus(fields as UnitStatus);
  } catch (err) {
    state = `unit state unavailable: ${errorMessage(err)}`;
  }
  const journal = await journalTail(ctx);
  logEvent(ctx.log, 'error', 'kubeletGateFailed', { unit: KUBELET_UNIT, ...fields }, `kubelet gate failed: ${what}`);
  return new StepError(`kubelet: ${what}; ${state}; last journal lines:\n${journal}`, {
    step: 'kubelet',
    retryable: true,
    cause,
  });
}

/** What the step reads: kubelet's unit, and the gate marker. */
export interface KubeletView {
  status: UnitStatus;
  /**
   * the gate marker's path, whether it is open for this site-config or exists at all, and this
   * site-config's hash (what the gate is opened for)
   */
  gate: { path: string; open: boolean; exists: boolean; configHash: string };
}

/** What apply does: open the gate for a site-config's hash (absent: it is open already), start kubelet. */
export interface KubeletDecision {
  openGateFor?: string;
  start: boolean;
}

const gateIsOpen = async (ctx: StepContext) => (await gateOpenFor(ctx.fs, ctx.stateDir)) === ctx.configHash;

export const kubeletStep: Step<KubeletView, KubeletDecision> = {
  name: 'kubelet',
  group: 'node',
  description: "open the gate (its marker) and start `kubelet.service` through systemd's D-Bus API, wait for the job",
  inputs: () => KUBELET_UNIT,

  async survey(ctx) {
    const status = await (await ctx.systemd()).unitStatus(KUBELET_UNIT);
    const path = gatePath(ctx.stateDir);
    return {
      status,
      gate: { path, open: await gateIsOpen(ctx), exists: await ctx.fs.exists(path), configHash: ctx.configHash },
    };
  },

  plan({ status, gate }) {
    if (status.unitFileState === 'masked')
      return { action: 'conflict', reason: `${KUBELET_UNIT} is masked; unmask it to let the agent start kubelet` };
    const active = status.activeState === 'active';
    if (gate.open && active) return { action: 'noop', reason: `the gate is open and ${KUBELET_UNIT} is running` };
    const changes: Change[] = [];
    if (!gate.open)
      changes.push({
        action: gate.exists ? 'update' : 'create',
        target: gate.path,
        summary: 'open the gate for this site-config',
      });
    if (!active)
      changes.push({
        action: 'start',
        target: KUBELET_UNIT,
        summary: `start and wait for the job (now ${status.activeState}/${status.subState}; enablement left ${status.unitFileState || 'unknown'})`,
      });
    return {
      action: 'change',
      summary: 'open the gate and start kubelet',
      changes,
      decision: { ...(!gate.open && { openGateFor: gate.configHash }), start: !active },
    };
  },

  async apply(ctx, decision) {
    const started = ctx.clock.monotonic();
    if (decision.openGateFor !== undefined) await openGate(ctx.fs, ctx.stateDir, decision.openGateFor);
    if (decision.start) {
      let jobResult: string;
      try {
        ({ jobResult } = await (await ctx.systemd()).startAndWait(KUBELET_UNIT, START_TIMEOUT_MS));
      } catch (err) {
        throw await failure(ctx, errorMessage(err), err);
      }
      if (jobResult !== 'done') throw await failure(ctx, `the start job ended with "${jobResult}"`);
    }
    logEvent(
      ctx.log,
      'info',
      'kubeletGateOpened',
      { unit: KUBELET_UNIT, durationMs: Math.round(ctx.clock.monotonic() - started) },
      decision.start ? 'kubelet gate opened: kubelet started' : 'kubelet gate opened: kubelet runs already',
    );
  },

  /** kubelet active: a start job can end "done" with the unit not running (a condition skipped) */
  async settle(ctx) {
    const status = await (await ctx.systemd()).unitStatus(KUBELET_UNIT);
    if (status.activeState === 'active' && (await gateIsOpen(ctx))) return;
    const err = await failure(ctx, 'not running after the start');
    throw new VerificationError(err.message, { step: 'kubelet', retryable: true });
  },
};
