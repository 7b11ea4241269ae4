/**
 * The ntp step against the test systemd on a private dbus-daemon: the site's chrony.conf in the
 * agent's file, chronyd started with it by a drop-in after a daemon reload, and /etc/chrony.conf,
 * a file of the machine-config daemon's current config, left byte for byte as that config declares.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBus } from '../../test/dbus/bus.js';
import { STATE_DIR, testNode, testSite } from '../../test/node/context.js';
import { CURRENT_CONFIG } from '../node/rendered-config.js';
import { CHRONYD_DROP_IN, ntpStep, renderChronydDropIn, SITE_CHRONY_CONF } from './ntp.js';
import { planOf, verifyStep } from '../engine/engine.js';

const SITE_CHRONY = 'server ntp1.store42.example.com iburst\nserver ntp2.store42.example.com iburst\nmakestep 1.0 3\n';
const FACTORY_CHRONY = 'server ntp.factory.example.com iburst\ndriftfile /var/lib/chrony/drift\n';

let bus: Awaited<ReturnType<typeof startTestBus>>;
beforeAll(async () => {
  bus = await startTestBus();
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
});
afterAll(() => bus?.stop());

/** A node whose rendered config declares /etc/chrony.conf (a chrony MachineConfig), laid out as the daemon wrote it. */
function chronyNode(chronyConfig: string | undefined = SITE_CHRONY) {
  const node = testNode({ site: testSite(chronyConfig === undefined ? {} : { chronyConfig }), systemd: true });
  const put = (file: string, content: string) => {
    mkdirSync(path.dirname(path.join(node.root, file)), { recursive: true });
    writeFileSync(path.join(node.root, file), content);
  };
  put('etc/chrony.conf', FACTORY_CHRONY);
  const source = `data:,${encodeURIComponent(FACTORY_CHRONY)}`;
  put(
    CURRENT_CONFIG,
    JSON.stringify({
      metadata: { name: 'rendered-master-5ca1ab1e' },
      spec: { config: { storage: { files: [{ path: '/etc/chrony.conf', mode: 420, contents: { source } }] } } },
    }),
  );
  return { node, put, read: (file: string) => readFileSync(path.join(node.root, file), 'utf8') };
}

const calls = async () =>
  (await bus.services.calls()).filter((c) => c.member === 'Reload' || c.member === 'RestartUnit');

describe('ntp', () => {
  it("runs chronyd with the site's chrony.conf, leaving the daemon's /etc/chrony.conf as declared", async () => {
    const { node, read } = chronyNode();
    await bus.services.configure({ root: node.root });
    expect(await planOf(ntpStep, node.ctx)).toMatchObject({
      action: 'change',
      changes: [
        { action: 'create', target: SITE_CHRONY_CONF },
        { action: 'create', target: CHRONYD_DROP_IN },
        { action: 'start', target: 'chronyd.service' },
      ],
    });
    const state = await node.run([ntpStep]);
    expect(state.steps.ntp?.status).toBe('done');
    expect(read(SITE_CHRONY_CONF)).toBe(SITE_CHRONY);
    expect(read(CHRONYD_DROP_IN)).toContain(
      `ExecStart=\nExecStart=/usr/sbin/chronyd $OPTIONS -f ${SITE_CHRONY_CONF}\n`,
    );
    expect(read('etc/chrony.conf')).toBe(FACTORY_CHRONY);
    // the reload first, so the restart reads the new drop-in
    expect(await calls()).toEqual([
      { member: 'Reload', args: [] },
      { member: 'RestartUnit', args: ['chronyd.service', 'replace'] },
    ]);

    await bus.services.configure({ root: node.root, units: { 'chronyd.service': { activeState: 'active' } } });
    expect(await planOf(ntpStep, node.ctx)).toEqual({
      action: 'noop',
      reason: "chronyd runs with the site's chrony.conf",
    });
    node.close();
  });

  it('restarts chronyd on the next run when a run was cut off between the files and the restart', async () => {
    const { node, put } = chronyNode();
    await bus.services.configure({ root: node.root });
    await node.run([ntpStep]);
    put(path.join(STATE_DIR, 'chronyd-restart-pending'), 'chronyd.service\n');
    await expect(verifyStep(ntpStep, node.ctx)).rejects.toThrow(
      'ntp: still differs after apply: start chronyd.service',
    );
    expect(await planOf(ntpStep, node.ctx)).toMatchObject({
      action: 'change',
      changes: [{ action: 'start', summary: 'restart: a previous run changed its files but did not restart it' }],
    });
    node.close();
  });

  it('puts the previous files back when chronyd does not restart with the new ones', async () => {
    const { node, read } = chronyNode();
    await bus.services.configure({ root: node.root, units: { 'chronyd.service': { startResult: 'failed' } } });
    await expect(node.run([ntpStep])).rejects.toThrow(
      "ntp: chronyd.service did not restart with the site's chrony.conf (failed)",
    );
    expect(existsSync(path.join(node.root, SITE_CHRONY_CONF))).toBe(false);
    expect(existsSync(path.join(node.root, CHRONYD_DROP_IN))).toBe(false);
    expect(read('etc/chrony.conf')).toBe(FACTORY_CHRONY);
    node.close();
  });

  it("takes an earlier site's files away when the site-config gives no chrony.conf", async () => {
    const first = chronyNode();
    await bus.services.configure({ root: first.node.root });
    await first.node.run([ntpStep]);
    const later = { ctx: { ...first.node.ctx, site: testSite() } };
    expect(await planOf(ntpStep, later.ctx)).toMatchObject({
      action: 'change',
      changes: [
        { action: 'delete', target: CHRONYD_DROP_IN },
        { action: 'delete', target: SITE_CHRONY_CONF },
        { action: 'start', target: 'chronyd.service' },
      ],
    });
    first.node.close();
    // and a node that never had one has nothing to do
    expect(await planOf(ntpStep, testNode().ctx)).toEqual({
      action: 'noop',
      reason: "the site-config gives no chrony.conf: the node's NTP stays",
    });
  });
});

describe('ntp decisions', () => {
  const CONF = 'server ntp.store42.example.com iburst\n';
  const inPlace = {
    [SITE_CHRONY_CONF]: { content: CONF, mode: 0o644 },
    [CHRONYD_DROP_IN]: { content: renderChronydDropIn(), mode: 0o644 },
  };
  const declaring = { name: 'rendered-master-1', files: new Map([[SITE_CHRONY_CONF, 'other']]) };
  const site = { path: SITE_CHRONY_CONF, content: CONF, mode: 0o644, uid: 0, gid: 0 };
  const dropIn = { path: CHRONYD_DROP_IN, content: renderChronydDropIn(), mode: 0o644, uid: 0, gid: 0 };
  it.each([
    ['no chrony.conf, nothing of the agent', { files: {} }, undefined, 'noop', [], undefined],
    [
      'no chrony.conf, an earlier site',
      { files: inPlace },
      undefined,
      'change',
      ['delete', 'delete', 'start'],
      { files: [] },
    ],
    [
      'a chrony.conf, nothing yet',
      { files: {} },
      CONF,
      'change',
      ['create', 'create', 'start'],
      { files: [site, dropIn] },
    ],
    ['a chrony.conf in place', { files: inPlace }, CONF, 'noop', [], undefined],
    [
      'in place, restart owed',
      { files: inPlace, restartPending: true },
      CONF,
      'change',
      ['start'],
      { files: [site, dropIn] },
    ],
    [
      'no newline at its end: one is added',
      { files: {} },
      'server ntp.store42.example.com iburst',
      'change',
      ['create', 'create', 'start'],
      { files: [site, dropIn] },
    ],
    ['a file the rendered config declares', { files: {}, declared: declaring }, CONF, 'conflict', [], undefined],
  ] as const)('%s', (_, view, chronyConfig, action, changes, decision) => {
    const plan = ntpStep.plan(
      { restartPending: false, ...view },
      testSite(chronyConfig === undefined ? {} : { chronyConfig }),
    );
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.action) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
