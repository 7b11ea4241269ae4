/**
 * Sites of either IP family, and nodes of dual-stack and IPv6 clusters, for the VM scenarios. The
 * uplink's qemu network carries IPv6 as well (fd00:c0:2::/64, its router fd00:c0:2::2 answering
 * ping and sending router advertisements), so a site can give br-ex static IPv6 addresses, a
 * default route over IPv6, or SLAAC.
 *
 * Every site's network check resolves the factory's API name through the node's resolver, which is
 * the node's own dnsmasq. That dnsmasq answers a name its address= lines give only in the other
 * family by forwarding the query to its upstream, and its upstream is the node itself (the
 * resolv.conf forcedns keeps): the query goes round until it is dropped, and a lookup that asks
 * both families (getent ahosts) waits for that answer until it times out. Each check of the
 * network then failed, and after the check's 90 s the network was rolled back. The check asks the
 * families the site has, the primary first, and an answer in one will do: on an IPv4-primary node
 * the A answer comes at once; on an IPv6-primary one, whose factory names are IPv4 only here,
 * after the AAAA lookup's own timeout.
 */
import { expect } from 'vitest';
import { nodeIpFiles } from '../../src/node/internal-ip.js';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { installFiles } from './disk.js';
import { buildNodeImage, type NodeImage } from './node-image.js';
import { events } from './node-checks.js';
import { FACTORY_DOMAIN, laySingleNodeDnsmasq } from './sno-dnsmasq.js';
import { GATEWAY, INTERNAL_IP, newSecret, SITE_ADDRESS, SITE_NETWORK, siteSpec } from './sites.js';
import type { Vm } from './vm.js';

export const V4 = INTERNAL_IP;
export const V6 = 'fd69::10/64';
export const SITE_V6_NETWORK = 'fd00:c0:2::/64';
export const SITE_V6_ADDRESS = 'fd00:c0:2::10';
/** qemu's router on the uplink: its address's interface id is also that of its link-local address */
export const V6_GATEWAY = 'fd00:c0:2::2';
export const UPLINK = `ipv4=on,net=${SITE_NETWORK},host=${GATEWAY},dhcpstart=192.0.2.100,ipv6=on,ipv6-net=${SITE_V6_NETWORK},ipv6-host=${V6_GATEWAY}`;
export const ip = (cidr: string) => cidr.split('/')[0]!;

export interface Family {
  /** static site address; `none`: a single-stack IPv6 cluster, no IPv4 on br-ex at all */
  ipv4?: 'static' | 'none';
  ipv6?: 'static' | 'slaac';
}

/** br-ex with ens4 as its port, the site's addresses of each family, default routes of the static ones. */
export function nmstate(f: Family): Record<string, unknown> {
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
        ipv4:
          f.ipv4 === 'none'
            ? { enabled: false }
            : { enabled: true, dhcp: false, address: f.ipv4 ? [{ ip: SITE_ADDRESS, 'prefix-length': 24 }] : [] },
        ipv6: v6Block,
      },
      { name: 'ens4', type: 'ethernet', state: 'up', ipv4: { enabled: false }, ipv6: { enabled: false } },
    ],
    routes: {
      config: [
        ...(f.ipv4 === 'static'
          ? [{ destination: '0.0.0.0/0', 'next-hop-address': GATEWAY, 'next-hop-interface': 'br-ex' }]
          : []),
        ...(f.ipv6 === 'static'
          ? [{ destination: '::/0', 'next-hop-address': V6_GATEWAY, 'next-hop-interface': 'br-ex' }]
          : []),
      ],
    },
    // DNS over IPv6: the node's own dnsmasq on its internal IPv6 address
    ...(f.ipv4 !== 'static' && { 'dns-resolver': { config: { server: [ip(V6)] } } }),
  };
}

export function spec(name: string, internal: string[], f: Family): Record<string, unknown> {
  const base = siteSpec(newSecret());
  const v6First = internal[0] === V6;
  const networks = [...(f.ipv4 === 'static' ? [SITE_NETWORK] : []), ...(f.ipv6 ? [SITE_V6_NETWORK] : [])];
  return {
    ...base,
    baseDomain: `${name}.example.com`,
    network: {
      nmstate: nmstate(f),
      internalIP: internal,
      machineNetworks: v6First ? networks.reverse() : networks,
      // each family the site routes must have a gateway that answers, and the factory's API name
      // must resolve through the node's resolver (see the top of this file)
      verify: { pingGateway: true, resolve: [`api.${FACTORY_DOMAIN}`], timeoutSeconds: 90 },
    },
  };
}

/**
 * A factory node of a dual-stack (or IPv6) cluster: its internal IPs pinned as the factory's
 * MachineConfigs would. A single-stack IPv6 cluster's dnsmasq gives the factory's names its IPv6
 * address, through the override file the assisted installer's script reads.
 */
export async function factoryNode(internal: string[]): Promise<NodeImage> {
  const image = await buildNodeImage();
  await laySingleNodeDnsmasq(image.disk);
  const v6Only = internal.length === 1 && internal[0] === V6;
  await installFiles(image.disk, [
    ...nodeIpFiles(internal).map((f) => ({ path: f.path, mode: f.mode, contents: Buffer.from(f.content) })),
    // the node's resolver is its dnsmasq, on the primary internal address (forcedns)
    { path: '/etc/resolv.conf', mode: 0o644, contents: Buffer.from(`nameserver ${ip(internal[0]!)}\n`) },
    ...(v6Only
      ? [
          {
            path: '/etc/default/sno_dnsmasq_configuration_overrides',
            mode: 0o644,
            contents: Buffer.from(`SNO_DNSMASQ_IP_OVERRIDE=${ip(V6)}\n`),
          },
        ]
      : []),
  ]);
  return image;
}

/** br-ex's global addresses of one family, in netlink order (the order OVN-Kubernetes reads them in). */
export async function brExAddresses(v: Vm, family: 4 | 6): Promise<{ cidr: string; dynamic: boolean }[]> {
  const links = JSON.parse(await v.sshOk(`ip -j -${family} addr show dev br-ex scope global`)) as {
    addr_info: { local?: string; prefixlen: number; dynamic?: boolean }[];
  }[];
  // addr_info also carries entries that are no address (no `local`)
  return (links[0]?.addr_info ?? [])
    .filter((a) => a.local !== undefined)
    .map((a) => ({ cidr: `${a.local}/${a.prefixlen}`, dynamic: a.dynamic === true }));
}

/** What every relocation here must leave: kubelet's node IPs in order, br-ex's order, the names, the checks. */
export async function expectRelocated(v: Vm, domain: string, internal: string[]): Promise<void> {
  const env = await v.sshOk(`systemctl show -p Environment ${KUBELET}`);
  expect(env).toContain(`KUBELET_NODE_IP=${ip(internal[0]!)} KUBELET_NODE_IPS=${internal.map(ip).join(',')}`);
  expect(await v.sshOk('cat /etc/systemd/system/crio.service.d/30-sno-relocate-node-ip.conf')).toContain(
    `CONTAINER_STREAM_ADDRESS=${ip(internal[0]!)}"`,
  );
  for (const family of [4, 6] as const) {
    const mine = internal.find((c) => (family === 6) === c.includes(':'));
    if (mine) expect((await brExAddresses(v, family))[0]?.cidr, `br-ex IPv${family}`).toBe(mine);
  }
  // each family the cluster has (a name of one family only is not asked in the other: see the top)
  const records = internal.map((c) => [c.includes(':') ? 'AAAA' : 'A', `${ip(c)}\n`] as const);
  for (const name of [`api.${domain}`, `api-int.${domain}`, `console-openshift-console.apps.${domain}`]) {
    for (const server of ['127.0.0.1', '::1']) {
      for (const [type, want] of records) {
        expect([name, server, await v.sshOk(`dig +short +time=2 +tries=2 @${server} ${name} ${type}`)]).toEqual([
          name,
          server,
          want,
        ]);
      }
    }
  }
}

/** The network check resolved the factory's API name, and nothing was rolled back. */
export async function expectResolvedInCheck(v: Vm): Promise<void> {
  expect(await events(v, 'networkRollback')).toEqual([]);
  const journal = await v.sshOk('journalctl -b 0 -u sno-relocate.service -o cat --no-pager');
  // committed only once every check of the site-config held, the name's resolution among them
  expect(journal).toMatch(/\[network\] site network committed/);
  expect(journal).not.toContain('does not resolve');
}
