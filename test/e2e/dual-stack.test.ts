// Dual-stack and IPv6 sites on a real node (test/e2e/ip-families.ts: the uplink carries both
// families). Three boots. Two are each a factory node and two sticks in turn (the second one a
// move to another site, as a technician does it): a dual-stack factory (IPv4 primary) at a static
// dual-stack site, then moved to a site whose IPv6 comes by SLAAC; a dual-stack factory (IPv6
// primary) at an IPv6-only site network (static address, default route and DNS over IPv6), then at
// a dual-stack site. The third is a single-stack IPv6 cluster at an IPv6 site. After each:
// kubelet's node IPs in the cluster's order, br-ex's first address per family the internal IP of
// that family, dnsmasq answering the site's names on the node in each family the cluster has, and
// (dual-stack) a second run of the agent finding nothing to do. Each site's network check also
// resolves the factory's API name (test/e2e/ip-families.ts says why that once failed).
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NodeImage } from './node-image.js';
import { events } from './node-checks.js';
import {
  announceSkip,
  endScenario,
  endVm,
  MIN,
  NODE_STEPS,
  skipVm,
  waitAgentSucceeded,
  waitKubeletActive,
} from './scenario.js';
import { FACTORY_DOMAIN } from './sno-dnsmasq.js';
import { SITE_ADDRESS, siteStick } from './sites.js';
import {
  brExAddresses,
  expectRelocated,
  expectResolvedInCheck,
  factoryNode,
  ip,
  SITE_V6_ADDRESS,
  spec,
  UPLINK,
  V4,
  V6,
  V6_GATEWAY,
} from './ip-families.js';
import { moveTo, waitRun } from './journey.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('dual-stack scenarios');

/** The agent again, on the same stick: every node step finds nothing to do. */
async function expectSecondRunNoop(v: Vm): Promise<void> {
  const finished = (await events(v, 'stepFinished')).length;
  const skipped = (await events(v, 'stepSkipped')).length;
  const runs = (await events(v, 'runFinished')).length;
  await v.sshOk('systemctl start --no-block sno-relocate.service');
  await waitRun(v, runs + 1);
  expect((await events(v, 'stepFinished')).slice(finished).map((e) => e.SNO_RELOCATE_STEP)).toEqual([]);
  const now = (await events(v, 'stepSkipped')).slice(skipped).map((e) => e.SNO_RELOCATE_STEP);
  expect(now).toEqual([...NODE_STEPS]);
}

describe.skipIf(skipVm)('dual-stack and IPv6 sites on a real node', () => {
  let dir = '';
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  const started = performance.now();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-dual-stack-'));
  });
  afterAll(async () => {
    await endScenario(vm, image, dir, {
      scenario: 'dual-stack',
      timings: { wallMs: Math.round(performance.now() - started) },
    });
  }, 5 * MIN);

  it(
    'dual-stack factory, IPv4 primary: a static dual-stack site, then one whose IPv6 is SLAAC',
    async () => {
      const internal = [V4, V6];
      image = await factoryNode(internal);
      const first = await siteStick(dir, 'dual-v4.img', spec('dual-v4', internal, { ipv4: 'static', ipv6: 'static' }));
      const slaac = await siteStick(dir, 'slaac.img', spec('slaac', internal, { ipv4: 'static', ipv6: 'slaac' }));
      vm = await bootVm({ name: 'dual-stack-v4', disk: image.disk, sticks: [first], uplinkNet: UPLINK });
      const v = vm;
      await v.waitSsh();
      await waitKubeletActive(v);
      await waitAgentSucceeded(v);
      await expectRelocated(v, 'sno.dual-v4.example.com', internal);
      await expectResolvedInCheck(v);
      expect((await brExAddresses(v, 6)).map((a) => a.cidr)).toEqual([V6, `${SITE_V6_ADDRESS}/64`]);
      expect(await v.sshOk('ip -6 route show default')).toMatch(
        new RegExp(`^default via ${V6_GATEWAY} dev br-ex`, 'm'),
      );
      await expectSecondRunNoop(v);

      await moveTo(v, slaac);
      await expectRelocated(v, 'sno.slaac.example.com', internal);
      // the SLAAC address from the router's prefix, behind the internal IPv6 address; the static one gone
      const v6 = await brExAddresses(v, 6);
      expect(v6[0]).toEqual({ cidr: V6, dynamic: false });
      expect(v6.slice(1).some((a) => a.dynamic && a.cidr.startsWith('fd00:c0:2:') && a.cidr.endsWith('/64'))).toBe(
        true,
      );
      expect(v6.map((a) => a.cidr)).not.toContain(`${SITE_V6_ADDRESS}/64`);
      expect(await v.sshOk('ip -6 route show default')).toMatch(/^default via fe80::\S+ dev br-ex proto ra/m);
      await expectSecondRunNoop(v);
      await endVm(v);
      vm = undefined;
      await image.dispose();
      image = undefined;
    },
    30 * MIN,
  );

  it(
    'dual-stack factory, IPv6 primary: an IPv6-only site network, then a dual-stack site',
    async () => {
      // the first boot's, had it stopped short
      await endVm(vm);
      await image?.dispose();
      const internal = [V6, V4];
      image = await factoryNode(internal);
      const v6only = await siteStick(dir, 'v6-only.img', spec('v6-only', internal, { ipv6: 'static' }));
      const dual = await siteStick(dir, 'dual-v6.img', spec('dual-v6', internal, { ipv4: 'static', ipv6: 'static' }));
      vm = await bootVm({ name: 'dual-stack-v6', disk: image.disk, sticks: [v6only], uplinkNet: UPLINK });
      const v = vm;
      await v.waitSsh();
      await waitKubeletActive(v);
      await waitAgentSucceeded(v);
      await expectRelocated(v, 'sno.v6-only.example.com', internal);
      await expectResolvedInCheck(v);
      // IPv6 only at the site: br-ex's IPv4 is the internal address alone, the way out is over IPv6
      expect((await brExAddresses(v, 4)).map((a) => a.cidr)).toEqual([V4]);
      expect((await v.sshOk('ip -4 route show default')).trim()).toBe('');
      expect(await v.sshOk('ip -6 route show default')).toMatch(
        new RegExp(`^default via ${V6_GATEWAY} dev br-ex`, 'm'),
      );
      expect((await v.ssh(`ping -6 -c 1 -W 5 ${V6_GATEWAY}`)).code).toBe(0);
      // DNS over IPv6: the node's resolver asks its dnsmasq at the internal IPv6 address
      expect(await v.sshOk(`getent ahostsv4 api.${FACTORY_DOMAIN} | head -n 1`)).toMatch(new RegExp(`^${ip(V4)}\\s`));
      expect(await v.sshOk(`dig +short +time=2 +tries=2 @${ip(V6)} api.${FACTORY_DOMAIN} A`)).toBe(`${ip(V4)}\n`);
      await expectSecondRunNoop(v);

      await moveTo(v, dual);
      await expectRelocated(v, 'sno.dual-v6.example.com', internal);
      expect((await brExAddresses(v, 4)).map((a) => a.cidr)).toEqual([V4, `${SITE_ADDRESS}/24`]);
      expect((await brExAddresses(v, 6)).map((a) => a.cidr)).toEqual([V6, `${SITE_V6_ADDRESS}/64`]);
      expect(await v.sshOk('cat /etc/default/nodeip-configuration')).toMatch(
        /^KUBELET_NODEIP_HINT=fd00:c0:2:: 192\.0\.2\.0$/m,
      );
      await expectSecondRunNoop(v);
      await endVm(v);
      vm = undefined;
      await image.dispose();
      image = undefined;
    },
    30 * MIN,
  );

  it(
    'single-stack IPv6 cluster: relocated to an IPv6 site, no IPv4 anywhere on br-ex',
    async () => {
      await endVm(vm);
      await image?.dispose();
      const internal = [V6];
      image = await factoryNode(internal);
      const stick = await siteStick(dir, 'v6.img', spec('v6', internal, { ipv4: 'none', ipv6: 'static' }));
      vm = await bootVm({ name: 'ipv6-single-stack', disk: image.disk, sticks: [stick], uplinkNet: UPLINK });
      const v = vm;
      await v.waitSsh();
      await waitKubeletActive(v);
      await waitAgentSucceeded(v);
      await expectRelocated(v, 'sno.v6.example.com', internal);
      await expectResolvedInCheck(v);
      expect(await brExAddresses(v, 4)).toEqual([]);
      expect((await brExAddresses(v, 6)).map((a) => a.cidr)).toEqual([V6, `${SITE_V6_ADDRESS}/64`]);
      expect(await v.sshOk('ip -6 route show default')).toMatch(
        new RegExp(`^default via ${V6_GATEWAY} dev br-ex`, 'm'),
      );
      expect(await v.sshOk('cat /etc/default/nodeip-configuration')).toMatch(/^KUBELET_NODEIP_HINT=fd00:c0:2::$/m);
      // the factory's names, IPv6 only, through the node's resolver
      expect(await v.sshOk(`getent ahostsv6 api.${FACTORY_DOMAIN} | head -n 1`)).toMatch(new RegExp(`^${ip(V6)}\\s`));
    },
    20 * MIN,
  );
});
