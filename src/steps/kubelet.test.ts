/** The kubelet gate through a real dbus-daemon and the test systemd (test/dbus). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestBus } from '../../test/dbus/bus.js';
import { STATE_DIR, testNode, testSite } from '../../test/node/context.js';
import { StepError } from '../base/errors.js';
import { MessageId } from '../log/events.js';
import { kubeletStep } from './kubelet.js';
import { allowErrorLog } from '../../test/helpers/error-log.js';
import { planOf } from '../engine/engine.js';
import type { UnitStatus } from '../ports/systemd.js';

let bus: Awaited<ReturnType<typeof startTestBus>>;
beforeAll(async () => {
  bus = await startTestBus();
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
});
afterAll(() => bus?.stop());
beforeEach(() => bus.services.configure({}));

const events = (logs: string[]) =>
  logs.map((l) => JSON.parse(l) as { event?: string; msgId?: string }).filter((l) => l.event);

describe('kubelet gate', () => {
  it('opens the gate for this site-config and starts kubelet, never touching its enablement', async () => {
    await bus.services.configure({ units: { 'kubelet.service': { unitFileState: 'enabled' } } });
    const node = testNode({ systemd: true });
    const marker = path.join(node.root, STATE_DIR, 'kubelet-gate');
    expect(await planOf(kubeletStep, node.ctx)).toEqual({
      action: 'change',
      summary: 'open the gate and start kubelet',
      changes: [
        { action: 'create', target: `${STATE_DIR}/kubelet-gate`, summary: 'open the gate for this site-config' },
        {
          action: 'start',
          target: 'kubelet.service',
          summary: 'start and wait for the job (now inactive/dead; enablement left enabled)',
        },
      ],
      decision: { openGateFor: node.ctx.configHash, start: true },
    });
    const state = await node.run([kubeletStep]);
    expect(state.steps.kubelet?.status).toBe('done');
    expect(readFileSync(marker, 'utf8')).toBe(`${node.ctx.configHash}\n`);
    expect(events(node.logs)).toContainEqual(
      expect.objectContaining({ event: 'kubeletGateOpened', msgId: MessageId.kubeletGateOpened }),
    );
    expect((await bus.services.calls()).map((c) => c.member)).not.toContain('EnableUnitFiles');
    expect(await planOf(kubeletStep, node.ctx)).toEqual({
      action: 'noop',
      reason: 'the gate is open and kubelet.service is running',
    });
    // a new site-config: the gate is open for the old one, so it is opened again for this one
    const next = { ...node.ctx, configHash: 'another site' };
    expect(await planOf(kubeletStep, next)).toMatchObject({
      action: 'change',
      changes: [{ action: 'update', target: `${STATE_DIR}/kubelet-gate` }],
      decision: { openGateFor: 'another site', start: false },
    });
    node.close();
  });

  it('fails to settle when kubelet did not come up although its start job ended (a skipped condition)', async () => {
    allowErrorLog(/"event":"kubeletGateFailed"/);
    const node = testNode({ systemd: true });
    await expect(kubeletStep.settle!(node.ctx, { start: true })).rejects.toThrow(
      /^kubelet: not running after the start; ActiveState=inactive/,
    );
    node.close();
  });

  it('fails with the unit state and the journal when the start job fails', async () => {
    allowErrorLog(/"event":"kubeletGateFailed"/);
    await bus.services.configure({ units: { 'kubelet.service': { startResult: 'failed' } } });
    const node = testNode({ systemd: true });
    const run = node.run([kubeletStep]);
    await expect(run).rejects.toBeInstanceOf(StepError);
    await expect(run).rejects.toMatchObject({ exitCode: 1, step: 'kubelet' });
    await expect(run).rejects.toThrow(
      /^kubelet: the start job ended with "failed"; ActiveState=failed SubState=failed Result=exit-code UnitFileState=disabled; last journal lines:\n./,
    );
    expect(events(node.logs)).toContainEqual(
      expect.objectContaining({ event: 'kubeletGateFailed', msgId: MessageId.kubeletGateFailed }),
    );
    node.close();
  });

  it('refuses a masked kubelet rather than unmasking it', async () => {
    await bus.services.configure({ units: { 'kubelet.service': { unitFileState: 'masked' } } });
    const node = testNode({ systemd: true });
    expect(await planOf(kubeletStep, node.ctx)).toEqual({
      action: 'conflict',
      reason: 'kubelet.service is masked; unmask it to let the agent start kubelet',
    });
    node.close();
  });

  it('stays shut when a node step before it fails', async () => {
    const node = testNode({ systemd: true });
    const failing = {
      ...kubeletStep,
      name: 'hostname' as const,
      plan: () => ({ action: 'change' as const, summary: 'x', changes: [], decision: { start: true } }),
      apply: async () => Promise.reject(new Error('hostnamed is down')),
    };
    await expect(node.run([failing, kubeletStep])).rejects.toThrow('hostname: hostnamed is down');
    expect((await bus.services.calls()).map((c) => c.member)).not.toContain('StartUnit');
    node.close();
  });
});

describe('kubelet decisions', () => {
  const unit = (activeState: string, unitFileState = 'enabled') =>
    ({
      activeState,
      subState: activeState === 'active' ? 'running' : 'dead',
      result: 'success',
      unitFileState,
    }) as UnitStatus;
  const gate = (open: boolean, exists: boolean) => ({
    path: `${STATE_DIR}/kubelet-gate`,
    open,
    exists,
    configHash: 'site-hash',
  });
  it.each([
    ['open and running', unit('active'), gate(true, true), 'noop', [], undefined],
    [
      'shut, never opened',
      unit('inactive'),
      gate(false, false),
      'change',
      ['create', 'start'],
      { openGateFor: 'site-hash', start: true },
    ],
    [
      'open for another site-config, running',
      unit('active'),
      gate(false, true),
      'change',
      ['update'],
      { openGateFor: 'site-hash', start: false },
    ],
    ['open, kubelet failed', unit('failed'), gate(true, true), 'change', ['start'], { start: true }],
    ['masked', unit('inactive', 'masked'), gate(false, false), 'conflict', [], undefined],
  ] as const)('%s', (_, status, g, action, changes, decision) => {
    const plan = kubeletStep.plan({ status, gate: g }, testSite());
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.action) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
