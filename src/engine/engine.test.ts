import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Site } from '../config/site.js';
import { createLogger } from '../log/logger.js';
import { systemClock } from '../ports/clock.js';
import { createRootFs } from '../ports/fs.js';
import { createBanner } from './banner.js';
import { planSteps, runSteps } from './engine.js';
import { RefusedError, StepError } from '../base/errors.js';
import { selectSteps } from './select.js';
import { StateStore } from './state.js';
import type { PlanResult, SiteBase, Step, StepContext, StepName } from './step.js';

/** What the file step decides: the file to write and its content. */
interface FileWrite {
  path: string;
  content: string;
}

/** A step over one file under the root: plans from the file's content, like the real steps plan from the host. */
function fileStep(
  name: StepName,
  file: string,
  want: string,
  hooks: { failApply?: () => boolean; conflict?: boolean } = {},
) {
  const applied: string[] = [];
  const step: Step<SiteBase, string | undefined, FileWrite> = {
    name,
    group: 'node',
    description: `writes ${file}`,
    inputs: () => want,
    survey: (ctx) => ctx.fs.readText(file),
    plan: (content): PlanResult<FileWrite> => {
      if (hooks.conflict) return { action: 'conflict', reason: 'host holds something else' };
      return content === want
        ? { action: 'noop', reason: 'already there' }
        : {
            action: 'change',
            summary: `write ${file}`,
            changes: [{ action: 'create', target: file }],
            decision: { path: file, content: want },
          };
    },
    apply: async (ctx, decision) => {
      if (hooks.failApply?.())
        throw new Error('disk on fire -----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----');
      applied.push(name);
      await ctx.fs.writeAtomic(decision.path, decision.content, { mode: 0o644 });
    },
  };
  return { step, applied };
}

function setup() {
  const root = mkdtempSync(path.join(tmpdir(), 'engine-'));
  const fs = createRootFs(root);
  const lines: string[] = [];
  const log = createLogger({ write: (l) => lines.push(l), journal: false, level: 'debug' });
  const ctx = {
    site: { name: 'store-1' } as Site,
    fs,
    log,
    clock: systemClock,
    stateDir: '/var/lib/sno-relocate',
  } as unknown as StepContext;
  const store = new StateStore(fs, '/var/lib/sno-relocate');
  const run = (steps: Step[], selected: Iterable<StepName> = steps.map((s) => s.name)) =>
    runSteps({ steps, selected: new Set(selected), ctx, store, banner: createBanner(undefined), configHash: 'h1' });
  return { root, fs, ctx, store, run, lines };
}

describe('runSteps', () => {
  it('applies steps in order and records each with its input hash in a 0600 state file', async () => {
    const { root, store, run } = setup();
    const a = fileStep('ssh-keys', '/a', 'A');
    const b = fileStep('hostname', '/b', 'B');
    const state = await run([a.step, b.step]);
    expect(state.result).toBe('succeeded');
    expect(readFileSync(path.join(root, 'a'), 'utf8')).toBe('A');
    const saved = await store.load();
    expect(saved?.steps['ssh-keys']?.status).toBe('done');
    expect(saved?.steps['hostname']?.inputHash).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(path.join(root, 'var/lib/sno-relocate/state.json')).mode & 0o777).toBe(0o600);
  });

  it('resumes after a failure: done steps are not applied again, the failed one is', async () => {
    const { store, run } = setup();
    let fail = true;
    const a = fileStep('ssh-keys', '/a', 'A');
    const b = fileStep('hostname', '/b', 'B', { failApply: () => fail });
    await expect(run([a.step, b.step])).rejects.toBeInstanceOf(StepError);
    const failed = await store.load();
    expect(failed?.result).toBe('failed');
    expect(failed?.steps['hostname']?.status).toBe('failed');
    expect(JSON.stringify(failed)).not.toContain('MIIB');

    fail = false;
    const state = await run([a.step, b.step]);
    expect(state.result).toBe('succeeded');
    expect(a.applied).toEqual(['ssh-keys']);
    expect(b.applied).toEqual(['hostname']);
    expect(state.steps['hostname']?.attempts).toBe(2);
  });

  it('applies again when the host drifted from a step recorded as done', async () => {
    const { root, run } = setup();
    const a = fileStep('ssh-keys', '/a', 'A');
    await run([a.step]);
    writeFileSync(path.join(root, 'a'), ''); // e.g. a power cut left an empty file behind
    await run([a.step]);
    expect(a.applied).toEqual(['ssh-keys', 'ssh-keys']);
    expect(readFileSync(path.join(root, 'a'), 'utf8')).toBe('A');
  });

  it('refuses a conflict in any node step before the first change', async () => {
    const { root, run, lines } = setup();
    const a = fileStep('ssh-keys', '/a', 'A');
    const c = fileStep('hostname', '/c', 'C', { conflict: true });
    await expect(run([a.step, c.step])).rejects.toBeInstanceOf(RefusedError);
    expect(a.applied).toEqual([]);
    expect(() => statSync(path.join(root, 'a'))).toThrow();
    // nothing written, not even the state file; the refusal is logged
    expect(() => statSync(path.join(root, 'var/lib/sno-relocate/state.json'))).toThrow();
    expect(lines.join('')).toContain('run refused: hostname: host holds something else');
  });

  it("hands apply's facts to the verification and later steps, recorded in the state; a plan's warnings are said once", async () => {
    const { run, lines } = setup();
    const afters: unknown[] = [];
    let applied = false;
    const step: Step<SiteBase, boolean, string, { version: string }> = {
      name: 'routes',
      group: 'cluster',
      description: 'moves a route',
      inputs: () => null,
      survey: (_ctx, after) => {
        afters.push(after);
        // what a lagging cache answers unless asked for the version apply wrote
        return Promise.resolve(after?.version === '7' && applied);
      },
      plan: (moved): PlanResult<string> =>
        moved
          ? { action: 'noop', reason: 'moved', warnings: ['a route someone else owns'] }
          : {
              action: 'change',
              summary: 'move',
              changes: [{ action: 'update', target: 'Route a/b' }],
              decision: 'a/b',
              warnings: ['a route someone else owns'],
            },
      apply: () => {
        applied = true;
        return Promise.resolve({ version: '7' });
      },
    };
    // a later step reads the earlier one's facts from the run's record
    const seen: unknown[] = [];
    const later: Step<SiteBase, null, never> = {
      name: 'health',
      group: 'cluster',
      description: 'reads what routes recorded',
      inputs: () => null,
      survey: (ctx) => {
        seen.push(ctx.facts?.['routes']);
        return Promise.resolve(null);
      },
      plan: (): PlanResult<never> => ({ action: 'noop', reason: 'nothing to wait for' }),
    };
    const state = await run([step, later]);
    expect(afters).toEqual([undefined, { version: '7' }]);
    expect(state.steps['routes']).toMatchObject({ status: 'done', facts: { version: '7' } });
    expect(seen).toEqual([{ version: '7' }]);
    expect(lines.filter((l) => l.includes('a route someone else owns'))).toHaveLength(1);
  });

  it('verifies by surveying again: a change that did not take fails the step with what is left', async () => {
    const { run } = setup();
    const a = fileStep('ssh-keys', '/a', 'A');
    const lost: Step<SiteBase, string | undefined, FileWrite> = { ...a.step, apply: async () => undefined };
    await expect(run([lost])).rejects.toThrow('ssh-keys: still differs after apply: create /a');
  });

  it("settles after apply and before the verification, both acting on the plan's decision", async () => {
    const { run } = setup();
    const order: string[] = [];
    const a = fileStep('ssh-keys', '/a', 'A');
    const step: Step<SiteBase, string | undefined, FileWrite> = {
      ...a.step,
      apply: async (ctx, decision) => {
        order.push(`apply ${decision.path}=${decision.content}`);
        await a.step.apply!(ctx, decision);
      },
      settle: async (_ctx, decision) => {
        order.push(`settle ${decision.path}`);
        return undefined;
      },
      survey: async (ctx) => {
        order.push('survey');
        return a.step.survey(ctx);
      },
    };
    await run([step]);
    // the preflight's survey, the run's, then the verification's after settle
    expect(order).toEqual(['survey', 'survey', 'apply /a=A', 'settle /a', 'survey']);
  });

  it("shows a plan's lines and never its decision, which may hold what the site-config holds", async () => {
    const { ctx } = setup();
    const secret = 'registry-password-Zq81';
    const a = fileStep('ssh-keys', '/a', secret);
    const plans = await planSteps({ steps: [a.step], selected: new Set(['ssh-keys']), ctx });
    expect(plans).toEqual([
      { step: 'ssh-keys', action: 'change', summary: 'write /a', changes: [{ action: 'create', target: '/a' }] },
    ]);
    expect(JSON.stringify(plans)).not.toContain(secret);
  });

  it('shows what a settling step waits for as its detail while it runs, without counting an attempt', async () => {
    const { run, store } = setup();
    const a = fileStep('ssh-keys', '/a', 'A');
    let seen: Awaited<ReturnType<typeof store.load>>;
    const step: Step<SiteBase, string | undefined, FileWrite> = {
      ...a.step,
      settle: async (ctx) => {
        await ctx.run?.progress?.('waiting for kube-apiserver revision 4');
        seen = await store.load();
      },
    };
    await run([step]);
    expect(seen!.steps['ssh-keys']).toMatchObject({
      status: 'running',
      attempts: 1,
      message: 'waiting for kube-apiserver revision 4',
    });
    expect((await store.load())!.steps['ssh-keys']).toMatchObject({ status: 'done', attempts: 1 });
  });

  it('never takes a damaged state file as done', async () => {
    const { root, run } = setup();
    const a = fileStep('ssh-keys', '/a', 'A');
    await run([a.step]);
    writeFileSync(path.join(root, 'var/lib/sno-relocate/state.json'), '{"version":1,"site":');
    await expect(run([a.step])).rejects.toThrow(/state file .* is damaged/);
  });

  it('logs started and finished with a duration and message id for each step', async () => {
    const { lines, run } = setup();
    await run([fileStep('ssh-keys', '/a', 'A').step]);
    const text = lines.join('');
    expect(text).toMatch(/\[ssh-keys\] step started msgId=6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a21/);
    expect(text).toMatch(/\[ssh-keys\] step finished msgId=6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a22 durationMs=\d+/);
  });
});

describe('selectSteps', () => {
  const steps: Step[] = [
    fileStep('a', '/a', 'A').step,
    fileStep('b', '/b', 'B').step,
    { ...fileStep('c', '/c', 'C').step, group: 'cluster' },
    { ...fileStep('d', '/d', 'D').step, group: 'cluster' },
  ];

  it('expands groups and removes skipped steps, in the order of the list', () => {
    expect([...selectSteps(steps, 'd,node', 'b')]).toEqual(['a', 'd']);
    expect([...selectSteps(steps, undefined, 'node')]).toEqual(['c', 'd']);
    expect([...selectSteps(steps, undefined, undefined)]).toEqual(['a', 'b', 'c', 'd']);
  });

  it('names an unknown step and lists the known ones', () => {
    expect(() => selectSteps(steps, 'netwrok', undefined)).toThrow(
      '--only: unknown step or group "netwrok" (steps: a, b, c, d; groups: node, cluster)',
    );
  });

  it('refuses a selection that leaves nothing', () => {
    expect(() => selectSteps(steps, 'b', 'node')).toThrow(/leave no step/);
  });
});
