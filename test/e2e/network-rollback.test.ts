// A site network that cuts the node off (its gateway never answers): the agent's verification
// fails, NetworkManager's checkpoint is rolled back, the uplink has its factory address again, the
// management link never lost the node, kubelet stays stopped and the agent exits 1 with the reason.
// The next boot, with a stick whose br-ex takes its address from DHCP, relocates the node: the
// br-ex profile keeps method auto and carries the internal IP, which comes first on br-ex.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { AGENT_UNIT, buildNodeImage, type NodeImage } from './node-image.js';
import { events, journal, unitProps } from './node-checks.js';
import {
  announceSkip,
  endScenario,
  MIN,
  skipVm,
  waitAgentExited,
  waitAgentSucceeded,
  waitKubeletActive,
} from './scenario.js';
import { DEAD_GATEWAY, FACTORY_UPLINK_ADDRESS, GATEWAY, INTERNAL_IP, newSecret, siteSpec, siteStick } from './sites.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('network rollback scenario');

describe.skipIf(skipVm)('a site network that cuts the node off', () => {
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let stickDir = '';
  let dhcpStick = '';

  beforeAll(async () => {
    image = await buildNodeImage();
    stickDir = await mkdtemp(join(tmpdir(), 'sno-e2e-rollback-'));
    const stick = await siteStick(
      stickDir,
      'dead-gateway.img',
      siteSpec(newSecret(), { gateway: DEAD_GATEWAY, verifyTimeoutSeconds: 20 }),
    );
    dhcpStick = await siteStick(stickDir, 'dhcp.img', siteSpec(newSecret(), { dhcp: true }));
    vm = await bootVm({ name: 'network-rollback', disk: image.disk, sticks: [stick] });
    await vm.waitSsh();
  }, 15 * MIN);

  afterAll(() => endScenario(vm, image, stickDir), 5 * MIN);

  it('is rolled back: factory uplink address, node reachable, kubelet stopped, exit 1 with the reason', async () => {
    const v = vm!;
    await waitAgentExited(v, '1/FAILURE', 8 * MIN);
    const [failed] = await events(v, 'runFailed');
    expect(failed!.MESSAGE).toContain(`gateway ${DEAD_GATEWAY} does not answer ping`);
    expect(await events(v, 'networkRollback')).not.toHaveLength(0);
    const stepFailed = (await events(v, 'stepFailed')).filter((e) => e.SNO_RELOCATE_STEP === 'network');
    expect(stepFailed).not.toHaveLength(0);

    // the factory network is back (polled: a retry of the unit may be applying again right now)
    await v.waitFor(
      'ip -j -4 addr show',
      (r) => {
        const links = JSON.parse(r.stdout) as { ifname: string; addr_info: { local: string }[] }[];
        const ens4 = links.find((l) => l.ifname === 'ens4')?.addr_info.map((a) => a.local) ?? [];
        return (
          ens4.includes(FACTORY_UPLINK_ADDRESS) && !links.some((l) => l.ifname === 'br-ex' && l.addr_info.length > 0)
        );
      },
      5 * MIN,
    );
    expect(await v.sshOk('ip -4 route show default')).toMatch(
      new RegExp(`^default via ${GATEWAY.replace(/\./g, '\\.')} dev ens4`, 'm'),
    );
    expect((await v.ssh(`ping -c 1 -W 5 ${GATEWAY}`)).code).toBe(0);
    expect(await v.sshOk('nmcli -t -f NAME,DEVICE connection show --active')).toMatch(/^uplink:ens4$/m);
    expect(await v.sshOk('ip -j -4 addr show dev ens3')).toContain('"local":"10.0.2.15"');
    expect(await v.sshOk('hostnamectl hostname')).toBe('sno-factory\n');
    expect((await v.ssh(`systemctl is-active ${KUBELET}`)).stdout.trim()).not.toBe('active');
    expect((await unitProps(v, KUBELET, ['ExecMainStartTimestampMonotonic'])).ExecMainStartTimestampMonotonic).toBe(
      '0',
    );
    const steps = (await journal(v, `-b 0 -u ${AGENT_UNIT}`)).map((e) => e.SNO_RELOCATE_STEP);
    expect(steps).not.toContain('hostname');
  });

  it('relocates at the next boot to a site whose br-ex uses DHCP, the internal IP first in the profile and on br-ex', async () => {
    const v = vm!;
    await v.shutdown();
    await v.bootAgain({ sticks: [dhcpStick] });
    await v.waitSsh();
    await waitKubeletActive(v);
    await waitAgentSucceeded(v);
    // the profile NetworkManager activates: the lease (method auto) and the internal IP as a static address
    expect(await v.sshOk('nmcli -g ipv4.method,ipv4.addresses connection show br-ex')).toBe(`auto\n${INTERNAL_IP}\n`);
    const addrs = JSON.parse(await v.sshOk('ip -j -4 addr show dev br-ex')) as {
      addr_info: { local: string; prefixlen: number; dynamic?: boolean }[];
    }[];
    const onBrEx = addrs[0]!.addr_info;
    // first: OVN-Kubernetes takes br-ex's first address as the node IP; the lease is behind it
    expect(`${onBrEx[0]!.local}/${onBrEx[0]!.prefixlen}`).toBe(INTERNAL_IP);
    expect(onBrEx.filter((a) => a.dynamic && a.local.startsWith('192.0.2.'))).toHaveLength(1);
    expect((await v.ssh(`ping -c 1 -W 5 ${GATEWAY}`)).code).toBe(0);
  });
});
