// Dual-stack and IPv6 sites on a real node. The uplink's qemu network carries IPv6 as well
// (fd00:c0:2::/64, its router fd00:c0:2::2 answering ping and sending router advertisements), so
// a site can give br-ex static IPv6 addresses, a default route over IPv6, or SLAAC. Two boots,
// each a factory node and two sticks in turn (the second one a move to another site, as a
// technician does it): a dual-stack factory (IPv4 primary) at a static dual-stack site, then
// moved to a site whose IPv6 comes by SLAAC; a dual-stack factory (IPv6 primary) at an IPv6-only
// site network (static address, default route and DNS over IPv6), then at a dual-stack site.
// After each: kubelet's node IPs in the cluster's order, br-ex's first address per family the
// internal IP of that family, dnsmasq answering A and AAAA for the site's names on the node, and a
// second run of the agent finding nothing to do.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeIpFiles } from '../../src/node/internal-ip.js';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { installFiles } from './disk.js';
import { buildNodeImage, type NodeImage } from './node-image.js';
import { events, MessageId } from './node-checks.js';
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
import { FACTORY_DOMAIN, laySingleNodeDnsmasq } from './sno-dnsmasq.js';
import { GATEWAY, INTERNAL_IP, newSecret, SITE_ADDRESS, SITE_NETWORK, siteSpec, siteStick } from './sites.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('dual-stack scenarios');

const V4 = INTERNAL_IP;
const V6 = 'fd69::10/64';
const SITE_V6_NETWORK = 'fd00:c0:2::/64';
const SITE_V6_ADDRESS = 'fd00:c0:2::10';
/** qemu's router on the uplink: its address's interface id is also that of its link-local address */
const V6_GATEWAY = 'fd00:c0:2::2';
const UPLINK = `ipv4=on,net=${SITE_NETWORK},host=${GATEWAY},dhcpstart=192.0.2.100,ipv6=on,ipv6-net=${SITE_V6_NETWORK},ipv6-host=${V6_GATEWAY}`;
const ip = (cidr: string) => cidr.split('/')[0]!;

interface Family {
  /** static site address, or SLAAC */
  ipv4?: 'static';
  ipv6?: 'static' | 'slaac';
}

/** br-ex with ens4 as its port, the site's addresses of each family, default routes of the static ones. */
function nmstate(f: Family): Record<string, unknown> {
  const v6Block =
    f.ipv6 === 'slaac'
      ? { enabled: true, dhcp: true, autoconf: true }
      : f.ipv6 === 'static'
        ? { enabled: true, dhcp: false, autoconf: false, address: [{ ip: SITE_V6_ADDRESS, 'prefix-length': 64 }] }
        : { enabled: false };
  return {
    interfaces: [
      {
        name: 'br-ex',
        type: 'linux-bridge',
        state: 'up',
        bridge: { options: { stp: { enabled: false } }, port: [{ name: 'ens4' }] },
        // an IPv6-only site: br-ex's IPv4 carries the cluster's internal IPv4 address alone
        ipv4: { enabled: true, dhcp: false, address: f.ipv4 ? [{ ip: SITE_ADDRESS, 'prefix-length': 24 }] : [] },
        ipv6: v6Block,
      },
      { name: 'ens4', type: 'ethernet', state: 'up', ipv4: { enabled: false }, ipv6: { enabled: false } },
    ],
    routes: {
      config: [
        ...(f.ipv4 ? [{ destination: '0.0.0.0/0', 'next-hop-address': GATEWAY, 'next-hop-interface': 'br-ex' }] : []),
        ...(f.ipv6 === 'static'
          ? [{ destination: '::/0', 'next-hop-address': V6_GATEWAY, 'next-hop-interface': 'br-ex' }]
          : []),
      ],
    },
    // DNS over IPv6: the node's own dnsmasq on its internal IPv6 address
    ...(!f.ipv4 && { 'dns-resolver': { config: { server: [ip(V6)] } } }),
  };
}

function spec(name: string, internal: string[], f: Family): Record<string, unknown> {
  const base = siteSpec(newSecret());
  const v6First = internal[0] === V6;
  const networks = [...(f.ipv4 ? [SITE_NETWORK] : []), ...(f.ipv6 ? [SITE_V6_NETWORK] : [])];
  return {
    ...base,
    baseDomain: `${name}.example.com`,
    network: {
      nmstate: nmstate(f),
      internalIP: internal,
      machineNetworks: v6First ? networks.reverse() : networks,
      // each family the site routes must have a gateway that answers
      verify: { pingGateway: true, timeoutSeconds: 90 },
    },
  };
}

/** A factory node of a dual-stack cluster: its internal IPs pinned as the factory's MachineConfigs would. */
async function dualStackFactory(internal: string[]): Promise<NodeImage> {
  const image = await buildNodeImage();
  await laySingleNodeDnsmasq(image.disk);
  await installFiles(image.disk, [
    ...nodeIpFiles(internal).map((f) => ({ path: f.path, mode: f.mode, contents: Buffer.from(f.content) })),
    // the node's resolver is its dnsmasq, on the primary internal address (forcedns)
    { path: '/etc/resolv.conf', mode: 0o644, contents: Buffer.from(`nameserver ${ip(internal[0]!)}\n`) },
  ]);
  return image;
}

/** br-ex's global addresses of one family, in netlink order (the order OVN-Kubernetes reads them in). */
async function brExAddresses(v: Vm, family: 4 | 6): Promise<{ cidr: string; dynamic: boolean }[]> {
  const links = JSON.parse(await v.sshOk(`ip -j -${family} addr show dev br-ex scope global`)) as {
    addr_info: { local?: string; prefixlen: number; dynamic?: boolean }[];
  }[];
  // addr_info also carries entries that are no address (no `local`)
  return (links[0]?.addr_info ?? [])
    .filter((a) => a.local !== undefined)
    .map((a) => ({ cidr: `${a.local}/${a.prefixlen}`, dynamic: a.dynamic === true }));
}

/** What every relocation here must leave: kubelet's node IPs in order, br-ex's order, the names, the checks. */
async function expectRelocated(v: Vm, domain: string, internal: string[]): Promise<void> {
  const env = await v.sshOk(`systemctl show -p Environment ${KUBELET}`);
  expect(env).toContain(`KUBELET_NODE_IP=${ip(internal[0]!)} KUBELET_NODE_IPS=${internal.map(ip).join(',')}`);
  expect(await v.sshOk('cat /etc/systemd/system/crio.service.d/30-sno-relocate-node-ip.conf')).toContain(
    `CONTAINER_STREAM_ADDRESS=${ip(internal[0]!)}"`,
  );
  for (const family of [4, 6] as const) {
    const mine = internal.find((c) => (family === 6) === c.includes(':'));
    if (mine) expect((await brExAddresses(v, family))[0]?.cidr, `br-ex IPv${family}`).toBe(mine);
  }
  for (const name of [`api.${domain}`, `api-int.${domain}`, `console-openshift-console.apps.${domain}`]) {
    for (const server of ['127.0.0.1', '::1']) {
      expect([name, server, await v.sshOk(`dig +short +time=2 +tries=2 @${server} ${name} A`)]).toEqual([
        name,
        server,
        `${ip(V4)}\n`,
      ]);
      expect([name, server, await v.sshOk(`dig +short +time=2 +tries=2 @${server} ${name} AAAA`)]).toEqual([
        name,
        server,
        `${ip(V6)}\n`,
      ]);
    }
  }
}

/** Waits until the agent's run number `n` of this boot has finished, and expects it to have succeeded. */
async function waitRun(v: Vm, n: number): Promise<void> {
  await v.waitFor(
    `journalctl -b 0 -q -o cat --no-pager MESSAGE_ID=${MessageId.runFinished} | wc -l`,
    (r) => Number(r.stdout.trim()) >= n,
    6 * MIN,
  );
  await waitAgentSucceeded(v);
}

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

/** Unplugs the stick of the last run and plugs the next site's; waits for that run to succeed. */
async function moveTo(v: Vm, stick: string): Promise<void> {
  const runs = (await events(v, 'runFinished')).length;
  await v.unplugStick();
  await v.plugStick(stick);
  await waitRun(v, runs + 1);
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
      image = await dualStackFactory(internal);
      const first = await siteStick(dir, 'dual-v4.img', spec('dual-v4', internal, { ipv4: 'static', ipv6: 'static' }));
      const slaac = await siteStick(dir, 'slaac.img', spec('slaac', internal, { ipv4: 'static', ipv6: 'slaac' }));
      vm = await bootVm({ name: 'dual-stack-v4', disk: image.disk, sticks: [first], uplinkNet: UPLINK });
      const v = vm;
      await v.waitSsh();
      await waitKubeletActive(v);
      await waitAgentSucceeded(v);
      await expectRelocated(v, 'sno.dual-v4.example.com', internal);
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
      image = await dualStackFactory(internal);
      const v6only = await siteStick(dir, 'v6-only.img', spec('v6-only', internal, { ipv6: 'static' }));
      const dual = await siteStick(dir, 'dual-v6.img', spec('dual-v6', internal, { ipv4: 'static', ipv6: 'static' }));
      vm = await bootVm({ name: 'dual-stack-v6', disk: image.disk, sticks: [v6only], uplinkNet: UPLINK });
      const v = vm;
      await v.waitSsh();
      await waitKubeletActive(v);
      await waitAgentSucceeded(v);
      await expectRelocated(v, 'sno.v6-only.example.com', internal);
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
    },
    30 * MIN,
  );
});
