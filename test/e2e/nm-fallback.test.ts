// The network backend a node without nmstatectl uses, NetworkManager's D-Bus API, on a real
// NetworkManager: one VM goes through the site networks sites use, one document after another, each
// applied by the agent (`run --only network`, as the network step runs at a site) and then read back
// the way a user would check it: `ip -j addr`, `ip -j route`, nmcli, /etc/resolv.conf, ping.
//
// The guest's NICs (vm.ts): ens3 management (never named), ens4 the uplink on qemu's user network
// 192.0.2.0/24 (DHCP from 192.0.2.100 with no router or DNS option, gateway 192.0.2.1) with IPv6
// 2001:db8:4::/64 added here.
// qemu answers router solicitations for that prefix (no M or O flag: SLAAC, and no DHCPv6 server
// for addresses), from fe80::2; it answers ping at its address 2001:db8:4::2 and at the link-local
// address with the same interface id, so fe80::2 answers only because its address ends in ::2
// (libslirp ip6.h in6_equal_router, ip6_icmp.c ndp_send_ra). ens7 and ens8 are added here on one
// hub of a second user network 198.51.100.0/24 (gateway 198.51.100.1), for a bond. qemu's user
// network passes no 802.1Q-tagged frames, so the VLAN is checked as the kernel and NetworkManager
// make it, not by traffic.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { BlockList, isIPv4 } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCidr } from '../../src/base/addresses.js';
import { copyBaseDisk } from './base-image.js';
import { installFiles } from './disk.js';
import { AGENT_BINARY, ensureAgentBuild } from './node-image.js';
import { shq } from './node-checks.js';
import { announceSkip, endVm, MIN, recordTimings, skipVm } from './scenario.js';
import { SITE_NAME } from './sites.js';
import { bootVm, type SshResult, type Vm } from './vm.js';

announceSkip('NetworkManager D-Bus backend scenarios');

const UPLINK_NET =
  'net=192.0.2.0/24,host=192.0.2.1,dhcpstart=192.0.2.100,ipv6-net=2001:db8:4::/64,ipv6-host=2001:db8:4::2';
/** ens7 and ens8 on hub 1, which a user network with its gateway at 198.51.100.1 is also on */
const BOND_NICS = [
  ['-netdev', 'user,id=bondnet,restrict=on,net=198.51.100.0/24,host=198.51.100.1,ipv6=off'],
  ['-netdev', 'hubport,id=bondhub,hubid=1,netdev=bondnet'],
  ['-netdev', 'hubport,id=bondp0,hubid=1'],
  ['-device', 'virtio-net-pci,netdev=bondp0,addr=0x7,mac=52:54:00:12:34:60'],
  ['-netdev', 'hubport,id=bondp1,hubid=1'],
  ['-device', 'virtio-net-pci,netdev=bondp1,addr=0x8,mac=52:54:00:12:34:61'],
].flat();

type Nmstate = Record<string, unknown>;
interface Verify {
  pingGateway?: boolean;
  timeoutSeconds?: number;
}

interface Addr {
  family: string;
  local: string;
  prefixlen: number;
  scope: string;
  dynamic?: boolean;
}
interface RouteRow {
  dst: string;
  gateway?: string;
  dev: string;
  metric?: number;
  protocol?: string;
}

const disabled = { enabled: false };
const staticV4 = (ip: string, prefix = 24) => ({
  enabled: true,
  dhcp: false,
  address: [{ ip, 'prefix-length': prefix }],
});

/** whether `dst` is the subnet of one of the addresses: the prefix route that comes with it */
function onLink(dst: string, own: Addr[]): boolean {
  const { ip, prefix } = parseCidr(dst);
  const family = isIPv4(ip) ? 'ipv4' : 'ipv6';
  const subnet = new BlockList();
  subnet.addSubnet(ip, prefix, family);
  return own.some((a) => a.prefixlen === prefix && subnet.check(a.local, family));
}

describe.skipIf(skipVm)("the network through NetworkManager's D-Bus API, on a real NetworkManager", () => {
  let vm: Vm | undefined;
  let work = '';
  const timings: Record<string, number> = {};

  /** writes the document into the guest and runs the network step on it; the run's result */
  async function apply(id: string, nmstate: Nmstate, verify: Verify = {}): Promise<SshResult> {
    const v = vm!;
    // noRefs: the same block twice must not become a YAML alias, which site-configs refuse
    const doc = yaml.dump(
      {
        apiVersion: 'sno-relocate/v1',
        kind: 'SiteConfig',
        metadata: { name: SITE_NAME },
        spec: {
          baseDomain: 'vm-store-0007.example.com',
          hostname: 'sno-vm-store7',
          pullSecret: { auths: { 'registry.vm-store-0007.example.com:5000': { auth: 'cHVsbGVyOnB3' } } },
          network: { nmstate, verify: { pingGateway: true, timeoutSeconds: 60, ...verify } },
        },
      },
      { noRefs: true },
    );
    const dir = `/root/sites/${id}`;
    await v.sshOk(`mkdir -p ${dir} && cat > ${dir}/site-config.yaml`, { input: doc });
    const started = performance.now();
    // each document a site of its own: its own state folder, so that none resumes another
    const r = await v.ssh(`${AGENT_BINARY} run --only network --state-dir /var/lib/sno-relocate-${id} ${dir}`, {
      timeoutMs: 8 * MIN,
    });
    timings[`${id}Ms`] = Math.round(performance.now() - started);
    return r;
  }
  async function applyOk(id: string, nmstate: Nmstate, verify: Verify = {}): Promise<string> {
    const r = await apply(id, nmstate, verify);
    if (r.code !== 0) throw new Error(`${id}: the run exited ${r.code}\n${r.stderr.slice(-3000)}`);
    return r.stderr;
  }

  const addrs = async (dev: string): Promise<Addr[]> =>
    ((JSON.parse(await vm!.sshOk(`ip -j addr show dev ${dev}`)) as { addr_info: Addr[] }[])[0]?.addr_info ?? []).filter(
      (a) => a.scope === 'global',
    );
  const cidrs = async (dev: string, family: 'inet' | 'inet6') =>
    (await addrs(dev))
      .filter((a) => a.family === family)
      .map((a) => `${a.local}/${a.prefixlen}`)
      .sort();
  /**
   * The routes of a device as `dst via gateway metric n`, but for the prefix routes of its own
   * addresses and IPv6's link-local and multicast ones, which come with any address.
   */
  const routes = async (family: 4 | 6, dev: string): Promise<string[]> => {
    const own = await addrs(dev);
    const rows = JSON.parse(await vm!.sshOk(`ip -j -${family} route show dev ${dev}`)) as RouteRow[];
    return rows
      .filter((r) => r.gateway || !(r.protocol === 'kernel' || /^(fe80::|ff00::)/.test(r.dst) || onLink(r.dst, own)))
      .map(
        (r) => `${r.dst}${r.gateway ? ` via ${r.gateway}` : ''}${r.metric !== undefined ? ` metric ${r.metric}` : ''}`,
      )
      .sort();
  };
  const pings = async (target: string, dev?: string) =>
    (await vm!.ssh(`ping -c 1 -W 5 ${dev ? `-I ${dev} ` : ''}${target}`)).code === 0;
  const resolvConf = async () =>
    (await vm!.sshOk('cat /etc/resolv.conf')).split('\n').filter((l) => /^(nameserver|search) /.test(l));
  /** profile settings as `nmcli -g` gives them, its escaping of colons undone */
  const nmcli = async (fields: string, profile: string) =>
    (await vm!.sshOk(`nmcli -g ${fields} connection show ${shq(profile)}`)).replace(/\\:/g, ':');

  beforeAll(async () => {
    const started = performance.now();
    work = await mkdtemp(join(tmpdir(), 'sno-e2e-nm-'));
    const disk = await copyBaseDisk(join(work, 'node.raw'));
    // the agent alone: no unit runs it at boot, each document is applied from here
    await installFiles(disk, [{ path: AGENT_BINARY, mode: 0o755, contents: await readFile(await ensureAgentBuild()) }]);
    vm = await bootVm({ name: 'nm-fallback', disk, uplinkNet: UPLINK_NET, qemuArgs: BOND_NICS });
    await vm.waitSsh();
    timings.bootMs = Math.round(performance.now() - started);
  }, 15 * MIN);

  afterAll(async () => {
    await endVm(vm);
    if (work) await rm(work, { recursive: true, force: true });
    await recordTimings('nm-fallback', timings);
  }, 5 * MIN);

  it('chooses the D-Bus backend on a node without nmstatectl', async () => {
    const v = vm!;
    expect((await v.ssh('command -v nmstatectl')).code).not.toBe(0);
    expect(await v.sshOk('nmcli -t -f RUNNING,VERSION general')).toMatch(/^running:1\.42\./);
    // the factory: ens4 on DHCP through the profile `uplink`
    await v.waitFor('nmcli -t -f DEVICE,STATE device', (r) => r.stdout.includes('ens4:connected'), 3 * MIN);
  });

  it('ethernet with static IPv4 and IPv6, the default route of each family, more routes and DNS', async () => {
    const log = await applyOk('static', {
      interfaces: [
        {
          name: 'ens4',
          type: 'ethernet',
          state: 'up',
          ipv4: staticV4('192.0.2.10'),
          ipv6: {
            enabled: true,
            dhcp: false,
            autoconf: false,
            address: [{ ip: '2001:db8:4::20', 'prefix-length': 64 }],
          },
        },
      ],
      routes: {
        config: [
          { destination: '0.0.0.0/0', 'next-hop-address': '192.0.2.1', 'next-hop-interface': 'ens4' },
          { destination: '::/0', 'next-hop-address': '2001:db8:4::2', 'next-hop-interface': 'ens4' },
          { destination: '198.18.0.0/16', 'next-hop-address': '192.0.2.254', 'next-hop-interface': 'ens4', metric: 50 },
          { destination: '198.19.0.0/16', 'next-hop-address': '192.0.2.254', 'next-hop-interface': 'ens4' },
          { destination: '2001:db8:99::/48', 'next-hop-address': '2001:db8:4::2', 'next-hop-interface': 'ens4' },
        ],
      },
      'dns-resolver': { config: { server: ['192.0.2.53', '2001:db8:4::53'], search: ['vm-store-0007.example.com'] } },
    });
    expect(log).toContain("network changes go through NetworkManager's D-Bus API: nmstatectl is not installed");
    expect(await cidrs('ens4', 'inet')).toEqual(['192.0.2.10/24']);
    expect(await cidrs('ens4', 'inet6')).toEqual(['2001:db8:4::20/64']);
    const v4 = await routes(4, 'ens4');
    expect(v4.filter((r) => r.startsWith('default'))).toHaveLength(1);
    expect(v4[0]).toMatch(/^198\.18\.0\.0\/16 via 192\.0\.2\.254 metric 50$/);
    expect(v4.some((r) => r.startsWith('198.19.0.0/16 via 192.0.2.254'))).toBe(true);
    expect(v4.some((r) => r.startsWith('default via 192.0.2.1'))).toBe(true);
    const v6 = await routes(6, 'ens4');
    expect(v6.some((r) => r.startsWith('default via 2001:db8:4::2'))).toBe(true);
    expect(v6.some((r) => r.startsWith('2001:db8:99::/48 via 2001:db8:4::2'))).toBe(true);
    expect(await pings('192.0.2.1')).toBe(true);
    expect(await pings('2001:db8:4::2')).toBe(true);
    expect(await resolvConf()).toEqual([
      'search vm-store-0007.example.com',
      'nameserver 192.0.2.53',
      'nameserver 2001:db8:4::53',
    ]);
    // the factory profile, changed in place: still the one profile of ens4
    expect(await nmcli('ipv4.method,ipv4.addresses,ipv6.method,ipv6.addresses', 'uplink')).toBe(
      'manual\n192.0.2.10/24\nmanual\n2001:db8:4::20/64\n',
    );
    expect(await v4Management()).toEqual(['10.0.2.15/24']);
  });

  /** the management link, which no document names, keeps its address throughout */
  const v4Management = () => cidrs('ens3', 'inet');

  it('removes one route (state: absent) of an interface the document does not list, and keeps the others', async () => {
    await applyOk('route-absent', {
      routes: { config: [{ destination: '198.18.0.0/16', 'next-hop-interface': 'ens4', state: 'absent' }] },
    });
    const v4 = await routes(4, 'ens4');
    expect(v4.some((r) => r.startsWith('198.18.0.0/16'))).toBe(false);
    expect(v4.some((r) => r.startsWith('198.19.0.0/16 via 192.0.2.254'))).toBe(true);
    expect(v4.some((r) => r.startsWith('default via 192.0.2.1'))).toBe(true);
    expect((await routes(6, 'ens4')).some((r) => r.startsWith('2001:db8:99::/48'))).toBe(true);
    expect(await cidrs('ens4', 'inet')).toEqual(['192.0.2.10/24']);
    expect(await nmcli('ipv4.routes', 'uplink')).not.toContain('198.18.0.0/16');
  });

  it('removes every route of an interface with an absent route that names no destination', async () => {
    await applyOk(
      'routes-absent',
      { routes: { config: [{ 'next-hop-interface': 'ens4', state: 'absent' }] } },
      // the default route goes too, so there is no gateway left to ping
      { pingGateway: false },
    );
    expect(await routes(4, 'ens4')).toEqual([]);
    expect(await routes(6, 'ens4')).toEqual([]);
    expect(await cidrs('ens4', 'inet')).toEqual(['192.0.2.10/24']);
    expect(await cidrs('ens4', 'inet6')).toEqual(['2001:db8:4::20/64']);
    expect(await nmcli('ipv4.gateway,ipv4.routes,ipv6.gateway,ipv6.routes', 'uplink')).toBe('\n\n\n\n');
    // the link itself still works: its own subnet is reachable
    expect(await pings('192.0.2.1')).toBe(true);
  });

  it('DHCP for IPv4 and autoconfiguration (SLAAC) for IPv6, a static default route beside the lease, the static DNS removed', async () => {
    await applyOk('dhcp', {
      interfaces: [
        {
          name: 'ens4',
          type: 'ethernet',
          state: 'up',
          ipv4: { enabled: true, dhcp: true },
          ipv6: { enabled: true, dhcp: true, autoconf: true },
        },
      ],
      // qemu's restricted user network leases no router and no DNS server (libslirp bootp.c), as
      // some site DHCP servers do: the default route is the site's, beside the lease
      routes: { config: [{ destination: '0.0.0.0/0', 'next-hop-address': '192.0.2.1', 'next-hop-interface': 'ens4' }] },
      'dns-resolver': { config: {} },
    });
    // NetworkManager calls the activation done once one family is configured (may-fail): the lease,
    // the router's advertisement and their default routes may come a little later
    await vm!.waitFor(
      'ip -j addr show dev ens4; ip -j -4 route show default dev ens4; ip -j -6 route show default dev ens4',
      (r) =>
        ['"local":"192.0.2.1', '"local":"2001:db8:4:', '"gateway":"192.0.2.1"', '"gateway":"fe80::2"'].every((x) =>
          r.stdout.includes(x),
        ),
      2 * MIN,
    );
    const leased = (await addrs('ens4')).filter((a) => a.dynamic);
    expect(leased.filter((a) => a.family === 'inet').map((a) => a.local)).toEqual([
      expect.stringMatching(/^192\.0\.2\.1\d\d$/),
    ]);
    expect(leased.filter((a) => a.family === 'inet6').map((a) => `${a.local}/${a.prefixlen}`)).toEqual([
      expect.stringMatching(/^2001:db8:4:[0-9a-f:]+\/64$/),
    ]);
    expect(await cidrs('ens4', 'inet')).not.toContain('192.0.2.10/24');
    expect((await routes(4, 'ens4')).some((r) => r.startsWith('default via 192.0.2.1'))).toBe(true);
    expect((await routes(6, 'ens4')).some((r) => r.startsWith('default via fe80::2'))).toBe(true);
    expect(await pings('2001:db8:4::2')).toBe(true);
    // the site's static DNS servers are gone with `config: {}`
    expect((await resolvConf()).filter((l) => /192\.0\.2\.53|2001:db8:4::53|vm-store-0007/.test(l))).toEqual([]);
    expect(await nmcli('ipv4.method,ipv6.method', 'uplink')).toBe('auto\nauto\n');
  });

  it('a bond of two NICs (active-backup) with a static address and a route through it', async () => {
    await applyOk('bond', {
      interfaces: [
        {
          name: 'bond0',
          type: 'bond',
          state: 'up',
          'link-aggregation': { mode: 'active-backup', options: { miimon: 100 }, port: ['ens7', 'ens8'] },
          ipv4: staticV4('198.51.100.10'),
          ipv6: disabled,
        },
        { name: 'ens7', type: 'ethernet', state: 'up' },
        { name: 'ens8', type: 'ethernet', state: 'up' },
      ],
      routes: {
        config: [{ destination: '203.0.113.0/24', 'next-hop-address': '198.51.100.1', 'next-hop-interface': 'bond0' }],
      },
    });
    const bonding = await vm!.sshOk('cat /proc/net/bonding/bond0');
    expect(bonding).toContain('Bonding Mode: fault-tolerance (active-backup)');
    expect(bonding).toContain('MII Polling Interval (ms): 100');
    expect([...bonding.matchAll(/^Slave Interface: (\S+)$/gm)].map((m) => m[1]).sort()).toEqual(['ens7', 'ens8']);
    for (const port of ['ens7', 'ens8'])
      expect(await vm!.sshOk(`ip -j link show ${port}`)).toContain('"master":"bond0"');
    expect(await cidrs('bond0', 'inet')).toEqual(['198.51.100.10/24']);
    expect(await routes(4, 'bond0')).toEqual([
      expect.stringMatching(/^203\.0\.113\.0\/24 via 198\.51\.100\.1 metric \d+$/),
    ]);
    expect(await pings('198.51.100.1', 'bond0')).toBe(true);
    // the uplink, which the document does not name, is as the previous document left it
    expect(await nmcli('ipv4.method', 'uplink')).toBe('auto\n');
  });

  it('a VLAN on the bond', async () => {
    await applyOk('vlan', {
      interfaces: [
        {
          name: 'bond0.42',
          type: 'vlan',
          state: 'up',
          vlan: { 'base-iface': 'bond0', id: 42 },
          ipv4: staticV4('10.42.0.10'),
          ipv6: disabled,
        },
      ],
    });
    const [link] = JSON.parse(await vm!.sshOk('ip -j -d link show bond0.42')) as {
      link: string;
      operstate: string;
      linkinfo: { info_kind: string; info_data: { protocol: string; id: number } };
    }[];
    expect(link!.link).toBe('bond0');
    expect(link!.linkinfo.info_kind).toBe('vlan');
    expect(link!.linkinfo.info_data).toMatchObject({ protocol: '802.1Q', id: 42 });
    expect(await cidrs('bond0.42', 'inet')).toEqual(['10.42.0.10/24']);
    expect(await vm!.sshOk('nmcli -t -f DEVICE,STATE device')).toMatch(/^bond0\.42:connected$/m);
    expect(await cidrs('bond0', 'inet')).toEqual(['198.51.100.10/24']);
  });

  it('a Linux bridge taking the uplink as its port, with the static address and default route', async () => {
    await applyOk('bridge', {
      interfaces: [
        {
          name: 'br-ex',
          type: 'linux-bridge',
          state: 'up',
          bridge: { options: { stp: { enabled: false } }, port: [{ name: 'ens4' }] },
          ipv4: staticV4('192.0.2.10'),
          ipv6: disabled,
        },
        { name: 'ens4', type: 'ethernet', state: 'up', ipv4: disabled, ipv6: disabled },
      ],
      routes: {
        config: [{ destination: '0.0.0.0/0', 'next-hop-address': '192.0.2.1', 'next-hop-interface': 'br-ex' }],
      },
    });
    expect(await vm!.sshOk('ip -j link show ens4')).toContain('"master":"br-ex"');
    expect(await cidrs('br-ex', 'inet')).toEqual(['192.0.2.10/24']);
    expect(await addrs('ens4')).toEqual([]);
    expect(await routes(4, 'br-ex')).toEqual([expect.stringMatching(/^default via 192\.0\.2\.1 metric \d+$/)]);
    expect(await pings('192.0.2.1')).toBe(true);
    expect(await vm!.sshOk('nmcli -t -f NAME,DEVICE connection show --active')).toMatch(/^uplink:ens4$/m);
  });

  it('a document the node cannot keep is rolled back: the bond, VLAN and bridge are as they were', async () => {
    const before = [await cidrs('bond0', 'inet'), await routes(4, 'br-ex'), await cidrs('bond0.42', 'inet')];
    const r = await apply(
      'rolled-back',
      {
        interfaces: [{ name: 'bond0', type: 'bond', state: 'up', ipv4: staticV4('198.51.100.20'), ipv6: disabled }],
        routes: {
          config: [
            { destination: '0.0.0.0/0', 'next-hop-interface': 'br-ex', state: 'absent' },
            { destination: '0.0.0.0/0', 'next-hop-address': '198.51.100.254', 'next-hop-interface': 'bond0' },
          ],
        },
      },
      { timeoutSeconds: 15 },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('gateway 198.51.100.254 does not answer ping');
    // NetworkManager activates the restored profiles after its rollback has returned: the bond takes a moment
    await vm!.waitFor('ip -j -4 addr show dev bond0', (x) => x.stdout.includes('"local":"198.51.100.10"'), 2 * MIN);
    expect([await cidrs('bond0', 'inet'), await routes(4, 'br-ex'), await cidrs('bond0.42', 'inet')]).toEqual(before);
    expect(await pings('192.0.2.1')).toBe(true);
    expect(await v4Management()).toEqual(['10.0.2.15/24']);
  });

  it('refuses at plan time what this backend cannot apply, changing nothing', async () => {
    const before = await vm!.sshOk('ip -j addr show; nmcli -t -f NAME,UUID connection show');
    const r = await apply('ovs', {
      interfaces: [{ name: 'br-ovs', type: 'ovs-bridge', state: 'up', bridge: { port: [{ name: 'ens8' }] } }],
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('interfaces[0] (br-ovs).type');
    expect(r.stderr).toContain('OVS needs nmstatectl');
    expect(await vm!.sshOk('ip -j addr show; nmcli -t -f NAME,UUID connection show')).toBe(before);
  });
});
