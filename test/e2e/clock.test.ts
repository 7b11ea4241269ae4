// A node that wakes up with a wrong clock: the guest's RTC six months ahead, then six months behind
// (qemu -rtc base=), and a real time server on the site network (chronyd on the host, serving its
// clock without touching it, which the guest reaches at the gateway address). The site's
// chrony.conf names that server; chronyd runs from boot, unsynchronised until then. Ahead, the
// stick's signature (valid for 30 more days) looks expired: admission defers it, the clock step
// waits for chronyd, steps the clock and judges it again. Behind, the clock is before the agent's
// lower bound (the signature's signing time): known wrong until the sync. In both the node ends
// relocated, on the true time.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableUnit, installFiles } from './disk.js';
import { AGENT_UNIT, buildNodeImage, ensureAgentBuild, type NodeImage } from './node-image.js';
import {
  announceSkip,
  expectSiteNetwork,
  MIN,
  recordTimings,
  skipVm,
  waitAgentSucceeded,
  waitKubeletActive,
} from './scenario.js';
import { newSecret, SITE_HOSTNAME, siteSpec, signedSiteStick } from './sites.js';
import { startTimeServer, type TimeServer } from './time-server.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('clock scenarios');

const DAY_MS = 86_400_000;
const SHIFT_DAYS = 182;
const TRUST_ANCHOR = '/etc/sno-relocate/trust/factory.pub';

describe.skipIf(skipVm)('a wrong clock at power-on, a time server at the site', () => {
  let image: NodeImage | undefined;
  let server: TimeServer | undefined;
  let dir = '';
  let stick = '';
  const vms: Vm[] = [];

  beforeAll(async () => {
    image = await buildNodeImage();
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-clock-'));
    server = await startTimeServer();
    const agent = await ensureAgentBuild();
    await promisify(execFile)(agent, ['keygen', '--out', join(dir, 'factory')]);
    await installFiles(image.disk, [
      { path: TRUST_ANCHOR, mode: 0o644, contents: await readFile(join(dir, 'factory.pub')) },
    ]);
    // chronyd runs from boot, as on RHCOS, with the factory's chrony.conf (sources it cannot reach)
    await enableUnit(image.disk, 'chronyd.service');
    const spec = { ...siteSpec(newSecret()), chronyConfig: `${server.serverLine}\n` };
    stick = await signedSiteStick(
      dir,
      'site.img',
      spec,
      agent,
      join(dir, 'factory.key'),
      new Date(Date.now() + 30 * DAY_MS),
    );
  }, 15 * MIN);

  afterAll(async () => {
    for (const v of vms) {
      await v.collectArtifacts().catch((e: Error) => console.log(`artifacts: ${e.message}`));
      await v.dispose();
    }
    await server?.stop();
    await image?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 5 * MIN);

  /** Boots with the RTC `days` off, waits for the relocation, checks the clock; returns the agent's journal. */
  const relocate = async (name: string, days: number): Promise<string> => {
    const started = performance.now();
    const rtc = new Date(Date.now() + days * DAY_MS).toISOString().slice(0, 19);
    const v = await bootVm({
      name,
      disk: image!.disk,
      sticks: [stick],
      uplinkToHost: true,
      qemuArgs: ['-rtc', `base=${rtc}`],
    });
    vms.push(v);
    await v.waitSsh();
    await waitKubeletActive(v);
    await waitAgentSucceeded(v);
    await recordTimings(name, { bootToDoneMs: Math.round(performance.now() - started) });
    await expectSiteNetwork(v);
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${SITE_HOSTNAME}\n`);
    // the node's clock is the true time now (the host's): within a minute of it
    const guestNow = Number((await v.sshOk('date +%s')).trim()) * 1000;
    expect(Math.abs(guestNow - Date.now())).toBeLessThan(60_000);
    expect(await v.sshOk('chronyc -n tracking')).toMatch(/^Leap status\s*:\s*Normal$/m);
    const journal = await v.sshOk(`journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager`);
    // the stick is released for the next boot, the artifacts kept
    await v.collectArtifacts();
    await v.dispose();
    vms.splice(vms.indexOf(v), 1);
    // the clock step waited for chronyd, which stepped the clock back by the RTC's error
    expect(journal).toContain('[clock] wait up to 60s for chronyd to synchronise the clock, then judge time again');
    const step = Number(/\[clock\] clock synchronised by chronyd: \S+ stepSeconds=(-?\d+)/.exec(journal)?.[1]);
    expect(Math.abs(step + days * 86_400)).toBeLessThan(600);
    expect(journal).toContain('[clock] time judged on the clock chronyd synchronised');
    return journal;
  };

  it(
    'RTC six months ahead: the signature looks expired, is judged again after the sync and accepted',
    async () => {
      const journal = await relocate('clock-ahead', SHIFT_DAYS);
      expect(journal).toMatch(
        /WARN {2}site-config signature expired on \S+ on the node's clock, which chronyd has not synchronised: judged again once it has/,
      );
      expect(journal).toContain(
        '[clock] site-config.sig: valid on the clock chronyd synchronised, judged again after the clock sync',
      );
    },
    15 * MIN,
  );

  it(
    'RTC six months behind: the clock is known wrong until the sync, then the run completes',
    async () => {
      const journal = await relocate('clock-behind', -SHIFT_DAYS);
      expect(journal).not.toMatch(/refused/);
    },
    15 * MIN,
  );
});
