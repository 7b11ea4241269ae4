// A node that boots without a stick, as one shipped to a site and switched on before the
// technician has the stick: boot completes and the agent says in the journal that it waits; a
// wrong stick is refused without touching the node; the right stick, plugged in while the node
// runs, starts the relocation and kubelet after it. One VM, in the order a site would see it.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { AGENT_UNIT, buildNodeImage, type NodeImage } from './node-image.js';
import {
  diffSnapshots,
  events,
  journal,
  networkView,
  NODE_TREES,
  shq,
  snapshotTrees,
  waitEvent,
} from './node-checks.js';
import {
  announceSkip,
  endScenario,
  expectKubeletGated,
  expectNodeHeld,
  expectSiteNetwork,
  MIN,
  recordTimings,
  skipVm,
  waitAgentExited,
  waitAgentSucceeded,
  waitKubeletActive,
} from './scenario.js';
import { newSecret, SITE_HOSTNAME, siteSpec, siteStick } from './sites.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('hot-plug scenarios');

describe.skipIf(skipVm)('a node booted without a stick', () => {
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let stickDir = '';
  let goodStick = '';
  let hostileStick = '';
  const secret = newSecret();

  beforeAll(async () => {
    image = await buildNodeImage();
    stickDir = await mkdtemp(join(tmpdir(), 'sno-e2e-hotplug-'));
    goodStick = await siteStick(stickDir, 'good.img', siteSpec(secret));
    const hostile = siteSpec(secret);
    (hostile.network as Record<string, unknown>).internalIP = 'not-a-cidr';
    hostileStick = await siteStick(stickDir, 'hostile.img', hostile);
    vm = await bootVm({ name: 'hotplug', disk: image.disk });
    await vm.waitSsh();
  }, 15 * MIN);

  afterAll(() => endScenario(vm, image, stickDir), 5 * MIN);

  it('completes boot, waits for a stick and says so in the journal; kubelet stays stopped', async () => {
    const v = vm!;
    await v.waitFor('systemctl is-active multi-user.target', (r) => r.stdout.trim() === 'active', 5 * MIN);
    await waitEvent(v, 'configWaiting', { timeoutMs: 5 * MIN });
    const [waiting] = await events(v, 'configWaiting');
    expect(waiting!.MESSAGE).toMatch(
      /waiting up to \d+s for a site-config: \/etc\/sno-relocate\/site-config\.yaml or a filesystem labelled cluster-config or relocation-config/,
    );
    expect(waiting!.SYSLOG_IDENTIFIER).toBe('sno-relocate');
    expect((await v.ssh(`systemctl is-active ${KUBELET}`)).stdout.trim()).toBe('inactive');
    // nothing else holds boot up: no job is left but the agent's own
    const jobs = (await v.sshOk('systemctl list-jobs --no-legend --plain')).split('\n').filter(Boolean);
    expect(jobs.filter((j) => !j.includes(AGENT_UNIT) && !j.includes(KUBELET))).toEqual([]);
  });

  it('refuses an invalid site-config: exit 2, the field named, nothing on the node changed, kubelet stopped', async () => {
    const v = vm!;
    const trees = await snapshotTrees(v, NODE_TREES);
    const network = await networkView(v, ['ens3', 'ens4', 'br-ex']);
    const hostname = await v.sshOk('hostnamectl hostname');
    const id = await v.plugStick(hostileStick);
    await waitAgentExited(v, '2/');
    const invalid = await events(v, 'configInvalid');
    expect(invalid.length).toBeGreaterThanOrEqual(1);
    expect(invalid[0]!.MESSAGE).toContain('site-config is invalid; nothing on the host was changed');
    const lines = (await journal(v, `-b 0 -u ${AGENT_UNIT}`)).map((e) => e.MESSAGE ?? '');
    expect(lines.some((l) => l.includes('spec.network.internalIP'))).toBe(true);
    expect(diffSnapshots(trees, await snapshotTrees(v, NODE_TREES))).toEqual([]);
    expect(await networkView(v, ['ens3', 'ens4', 'br-ex'])).toEqual(network);
    expect(await v.sshOk('ls -A /var/lib/kubelet 2>/dev/null; true')).toBe('');
    await expectNodeHeld(v, hostname);
    await v.unplugStick(id);
  });

  it('relocates when the right stick is plugged in while the node runs, and starts kubelet after it', async () => {
    const v = vm!;
    const plugged = performance.now();
    await v.plugStick(goodStick);
    // the refused run left the unit failed: wait for the new run before judging the unit's state
    await waitEvent(v, 'runStarted', { timeoutMs: 5 * MIN });
    await waitKubeletActive(v);
    const hostToKubeletMs = performance.now() - plugged;
    await waitAgentSucceeded(v);
    const gate = await expectKubeletGated(v);
    await expectSiteNetwork(v);
    expect((await v.sshOk('hostnamectl hostname')).trim()).toBe(SITE_HOSTNAME);
    // guest side: from the kernel seeing the stick to kubelet active, on the guest's own clock
    const attach = (await journal(v, '-b 0 -k --grep "usb-storage .*USB Mass Storage device detected"')).map((e) =>
      Number(e.__MONOTONIC_TIMESTAMP),
    );
    const lastAttach = Math.max(...attach);
    await recordTimings('hotplug', {
      hostPlugToKubeletMs: Math.round(hostToKubeletMs),
      guestAttachToKubeletMs: Math.round((gate.kubeletActiveUs - lastAttach) / 1000),
      guestAgentProcessMs: Math.round((gate.agentExitUs - gate.agentStartUs) / 1000),
    });
  });
  it("keeps the agent's unit in its sandbox: only the folders the steps write are writable", async () => {
    const v = vm!;
    const show = await v.sshOk(
      `systemctl show ${AGENT_UNIT} -p ProtectSystem -p UMask -p MemoryMax -p ProtectKernelModules -p ProtectKernelLogs -p RestrictSUIDSGID`,
    );
    expect(show.trim().split('\n').sort()).toEqual([
      `MemoryMax=${512 * 1024 * 1024}`,
      'ProtectKernelLogs=yes',
      'ProtectKernelModules=yes',
      'ProtectSystem=strict',
      'RestrictSUIDSGID=yes',
      'UMask=0077',
    ]);
    // the agent's own unit, sandbox and all, with a probe in place of the agent
    const targets = [
      '/etc/sno-probe',
      '/usr/local/sno-probe',
      '/var/lib/sno-relocate/sno-probe',
      '/home/core/sno-probe',
    ];
    const probe = `for f in ${targets.join(' ')}; do touch "$f" || true; done`;
    await v.sshOk(`printf '%s\\n' ${shq(probe)} >/run/sno-probe.sh`);
    await v.sshOk(
      `sed -e 's|^ExecStart=.*|ExecStart=/bin/sh /run/sno-probe.sh|' -e '/^Restart/d' -e '/^Condition/d' ` +
        `"$(systemctl show -P FragmentPath ${AGENT_UNIT})" >/run/systemd/system/sno-probe.service && ` +
        'systemctl daemon-reload && systemctl start sno-probe.service',
    );
    const present = await v.sshOk(`for f in ${targets.join(' ')}; do test -e $f && echo $f; done; true`);
    expect(present.split('\n').filter(Boolean)).toEqual(['/var/lib/sno-relocate/sno-probe', '/home/core/sno-probe']);
    const refused = (await journal(v, '-b 0 -u sno-probe.service')).map((e) => e.MESSAGE ?? '').join('\n');
    expect(refused).toContain("cannot touch '/etc/sno-probe': Read-only file system");
    await v.sshOk(`rm -f ${targets.join(' ')} /run/sno-probe.sh /run/systemd/system/sno-probe.service`);
    await v.sshOk('systemctl daemon-reload');
  });
});
