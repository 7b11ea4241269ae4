/**
 * The systemd D-Bus adapter against a real dbus-daemon and services that speak systemd's and
 * hostnamed's interfaces: signatures, signals and errors go over a real bus.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import type { Systemd } from '../../src/ports/systemd.js';
import { connectSystemdBus } from '../../src/ports/systemd-dbus.js';
import { startTestBus } from './bus.js';

const log = createLogger({ write: () => undefined, journal: false });
let bus: Awaited<ReturnType<typeof startTestBus>>;
let root: string;
const open: Systemd[] = [];

async function connect(): Promise<Systemd> {
  const systemd = await connectSystemdBus(log);
  open.push(systemd);
  return systemd;
}

/** connected with a logger whose lines the test reads, reporting a waiting job after 0.1 s */
async function connectReporting(): Promise<{ systemd: Systemd; lines: string[] }> {
  const lines: string[] = [];
  const log = createLogger({ write: (line) => lines.push(line), journal: false, format: 'text' });
  const systemd = await connectSystemdBus(log, { reportWaitAfterMs: 100 });
  open.push(systemd);
  return { systemd, lines };
}

beforeAll(async () => {
  bus = await startTestBus();
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
});
afterAll(async () => {
  open.forEach((s) => s.close());
  await bus?.stop();
});
beforeEach(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'dbus-root-'));
  await bus.services.configure({ root });
});

describe('systemd over D-Bus', () => {
  it('reloads, then starts a unit without touching its enablement, and returns the job result', async () => {
    const systemd = await connect();
    expect(await systemd.unitStatus('kubelet.service')).toEqual({
      activeState: 'inactive',
      subState: 'dead',
      result: 'success',
      unitFileState: 'disabled',
    });
    expect(await systemd.startAndWait('kubelet.service', 5000)).toEqual({ jobResult: 'done' });
    expect(await systemd.unitStatus('kubelet.service')).toEqual({
      activeState: 'active',
      subState: 'running',
      result: 'success',
      unitFileState: 'disabled',
    });
    const calls = (await bus.services.calls()).filter((c) => c.member !== 'LoadUnit');
    expect(calls).toEqual([
      { member: 'Reload', args: [] },
      { member: 'Subscribe', args: [] },
      { member: 'StartUnit', args: ['kubelet.service', 'replace'] },
    ]);
  });

  it('reports a failed start job and the unit state it left', async () => {
    await bus.services.configure({ root, units: { 'kubelet.service': { startResult: 'failed' } } });
    const systemd = await connect();
    expect(await systemd.startAndWait('kubelet.service', 5000)).toEqual({ jobResult: 'failed' });
    expect(await systemd.unitStatus('kubelet.service')).toMatchObject({
      activeState: 'failed',
      subState: 'failed',
      result: 'exit-code',
    });
  });

  it('catches the job result when JobRemoved arrives before the reply to StartUnit', async () => {
    await bus.services.configure({ root, units: { 'kubelet.service': { jobRemovedBeforeReply: true } } });
    const systemd = await connect();
    expect(await systemd.startAndWait('kubelet.service', 5000)).toEqual({ jobResult: 'done' });
    // a second start on the same connection: systemd refuses a second Subscribe from one client
    expect(await systemd.startAndWait('kubelet.service', 5000)).toEqual({ jobResult: 'done' });
    expect((await bus.services.calls()).filter((c) => c.member === 'Subscribe')).toHaveLength(1);
  });

  it('gives up on a job that never finishes, naming it', async () => {
    await bus.services.configure({ root, units: { 'kubelet.service': { startResult: 'never' } } });
    const systemd = await connect();
    await expect(systemd.startAndWait('kubelet.service', 300)).rejects.toThrow(
      'waiting for the start job of kubelet.service (/org/freedesktop/systemd1/job/',
    );
  });

  it('says what a waiting job waits for: the jobs systemd runs meanwhile', async () => {
    await bus.services.configure({
      root,
      units: { 'kubelet.service': { startResult: 'never' } },
      runningJobs: [{ unit: 'chrony-wait.service', type: 'start' }],
    });
    const { systemd, lines } = await connectReporting();
    await expect(systemd.startAndWait('kubelet.service', 3000)).rejects.toThrow('waiting for the start job');
    const reports = lines.filter((l) => l.includes('is still waiting'));
    // at 0.1 s, then at three times the interval: 0.4 s, 1.3 s
    expect(reports.length).toBeGreaterThanOrEqual(2);
    for (const r of reports)
      expect(r).toMatch(
        /the start job of kubelet\.service is still waiting after \d+ s; systemd is running chrony-wait\.service \(start\)/,
      );
  });

  it('says so when systemd runs no other job', async () => {
    await bus.services.configure({ root, units: { 'kubelet.service': { startResult: 'never' } } });
    const { systemd, lines } = await connectReporting();
    await expect(systemd.startAndWait('kubelet.service', 1000)).rejects.toThrow('waiting for the start job');
    expect(lines.find((l) => l.includes('is still waiting'))).toContain('systemd is running no other job');
  });

  it("passes systemd's error name and text on", async () => {
    await bus.services.configure({ root, units: { 'kubelet.service': { unitFileState: 'masked' } } });
    const systemd = await connect();
    await expect(systemd.startAndWait('kubelet.service', 5000)).rejects.toThrow(
      'StartUnit(kubelet.service, replace) failed: org.freedesktop.systemd1.UnitMasked: Unit kubelet.service is masked.',
    );
  });

  it('reads and sets the static hostname through hostnamed, without interaction', async () => {
    const systemd = await connect();
    expect(await systemd.staticHostname()).toBe('');
    await systemd.setStaticHostname('sno-store42');
    expect(await systemd.staticHostname()).toBe('sno-store42');
    expect(readFileSync(path.join(root, 'etc/hostname'), 'utf8')).toBe('sno-store42\n');
    expect(await bus.services.calls()).toContainEqual({ member: 'SetStaticHostname', args: ['sno-store42', false] });
    await expect(systemd.setStaticHostname('bad_name!')).rejects.toThrow(
      "org.freedesktop.DBus.Error.InvalidArgs: Invalid static hostname 'bad_name!'",
    );
  });

  it('says which bus it could not reach', async () => {
    const saved = process.env.DBUS_SYSTEM_BUS_ADDRESS;
    process.env.DBUS_SYSTEM_BUS_ADDRESS = 'unix:path=/nonexistent/system_bus_socket';
    try {
      await expect(connectSystemdBus(log)).rejects.toThrow(
        'cannot reach systemd over D-Bus at unix:path=/nonexistent/system_bus_socket: connect ENOENT',
      );
    } finally {
      process.env.DBUS_SYSTEM_BUS_ADDRESS = saved;
    }
  });
});
