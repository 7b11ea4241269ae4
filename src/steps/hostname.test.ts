/** The hostname step through a real dbus-daemon and the test hostnamed (test/dbus). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBus } from '../../test/dbus/bus.js';
import { testNode, testSite } from '../../test/node/context.js';
import { FACTORY_HOSTNAME } from '../../test/fixtures/factory-node.js';
import { hostnameStep } from './hostname.js';
import { planOf } from '../engine/engine.js';

let bus: Awaited<ReturnType<typeof startTestBus>>;
beforeAll(async () => {
  bus = await startTestBus();
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
});
afterAll(() => bus?.stop());

describe('hostname', () => {
  it('plans from /etc/hostname, sets the name through hostnamed without interaction, and is then done', async () => {
    const node = testNode({ site: testSite({ hostname: 'sno-store42' }), systemd: true });
    await bus.services.configure({ root: node.root });
    expect(await planOf(hostnameStep, node.ctx)).toEqual({
      action: 'change',
      summary: 'set the static hostname to sno-store42',
      changes: [
        {
          action: 'set',
          target: 'static hostname',
          summary: 'through systemd-hostnamed',
          diff: [`- ${FACTORY_HOSTNAME}`, '+ sno-store42'],
        },
      ],
      decision: { hostname: 'sno-store42' },
    });
    const state = await node.run([hostnameStep]);
    node.close();
    expect(state.steps.hostname?.status).toBe('done');
    expect(readFileSync(path.join(node.root, 'etc/hostname'), 'utf8')).toBe('sno-store42\n');
    expect(await bus.services.calls()).toContainEqual({ member: 'SetStaticHostname', args: ['sno-store42', false] });
    expect(await planOf(hostnameStep, node.ctx)).toEqual({
      action: 'noop',
      reason: 'the static hostname is already sno-store42',
    });
  });

  it('refuses localhost before it reaches hostnamed, naming the field', async () => {
    const node = testNode({ site: testSite({ hostname: 'localhost' }), systemd: true });
    await bus.services.configure({ root: node.root });
    await expect(node.run([hostnameStep])).rejects.toMatchObject({
      exitCode: 2,
      findings: [{ path: '$.spec.hostname', message: 'localhost is not a usable node name' }],
    });
    expect(await bus.services.calls()).toEqual([]);
  });

  it('does nothing when the site-config names no host', async () => {
    expect(await planOf(hostnameStep, testNode().ctx)).toEqual({
      action: 'noop',
      reason: 'the site-config sets no hostname',
    });
  });
});

describe('hostname decisions', () => {
  it.each([
    [undefined, 'factory-node', 'noop', undefined],
    ['store-42', 'store-42', 'noop', undefined],
    ['store-42', 'factory-node', 'change', { hostname: 'store-42' }],
    ['store-42', '', 'change', { hostname: 'store-42' }],
  ] as const)('wanted %s, /etc/hostname %j: %s', (hostname, current, action, decision) => {
    const plan = hostnameStep.plan({ current }, testSite(hostname === undefined ? {} : { hostname }));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });

  it('refuses a name that would break the node, naming the field', () => {
    expect(() => hostnameStep.plan({ current: 'x' }, testSite({ hostname: 'bad_name.' }))).toThrow(
      expect.objectContaining({ findings: [expect.objectContaining({ path: '$.spec.hostname' })] }),
    );
  });
});
