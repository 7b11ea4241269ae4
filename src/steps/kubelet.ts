/**
 * [kubelet] The gate: kubelet is disabled at the factory and the run stops at the first node step
 * that fails, so kubelet starts only once every node step before it has succeeded. Then it is
 * enabled and started over systemd's D-Bus API, and the start job's result decides: a job that does
 * not end in "done" fails the step with the unit's state and the last lines of its journal.
 */
import { errorMessage, StepError, VerificationError } from '../base/errors.js';
import type { Step, StepContext } from '../config/site.js';
import { KUBELET_START_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { logEvent } from '../log/logger.js';
import type { UnitStatus } from '../ports/systemd.js';

export const KUBELET_UNIT = 'kubelet.service';
const START_TIMEOUT_MS = KUBELET_START_TIMEOUT_SECONDS * 1000;
const JOURNAL_LINES = 20;
const ENABLED = new Set(['enabled', 'enabled-runtime']);

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

export const kubeletStep: Step = {
  name: 'kubelet',
  group: 'node',
  description: "enable and start `kubelet.service` through systemd's D-Bus API, wait for the job",
  inputs: () => KUBELET_UNIT,

  async plan(ctx) {
    const status = await (await ctx.systemd()).unitStatus(KUBELET_UNIT);
    if (status.unitFileState === 'masked')
      return { action: 'conflict', reason: `${KUBELET_UNIT} is masked; unmask it to let the agent start kubelet` };
    const active = status.activeState === 'active';
    const enabled = ENABLED.has(status.unitFileState);
    if (active && enabled) return { action: 'noop', reason: `${KUBELET_UNIT} is already enabled and running` };
    return {
      action: 'change',
      summary: 'open the gate: enable and start kubelet',
      changes: [
        ...(enabled
          ? []
          : [
              {
                action: 'update' as const,
                target: KUBELET_UNIT,
                summary: `enable (now ${status.unitFileState || 'unknown'})`,
              },
            ]),
        ...(active
          ? []
          : [
              {
                action: 'start' as const,
                target: KUBELET_UNIT,
                summary: `start and wait for the job (now ${status.activeState}/${status.subState})`,
              },
            ]),
      ],
    };
  },

  async apply(ctx) {
    const systemd = await ctx.systemd();
    const started = ctx.clock.monotonic();
    let jobResult: string;
    try {
      ({ jobResult } = await systemd.enableAndStart(KUBELET_UNIT, START_TIMEOUT_MS));
    } catch (err) {
      throw await failure(ctx, errorMessage(err), err);
    }
    if (jobResult !== 'done') throw await failure(ctx, `the start job ended with "${jobResult}"`);
    logEvent(
      ctx.log,
      'info',
      'kubeletGateOpened',
      { unit: KUBELET_UNIT, durationMs: Math.round(ctx.clock.monotonic() - started) },
      'kubelet gate opened: kubelet enabled and started',
    );
  },

  async verify(ctx) {
    const status = await (await ctx.systemd()).unitStatus(KUBELET_UNIT);
    if (status.activeState === 'active' && ENABLED.has(status.unitFileState)) return;
    const err = await failure(ctx, 'not running after the start');
    throw new VerificationError(err.message, { step: 'kubelet', retryable: true });
  },
};
