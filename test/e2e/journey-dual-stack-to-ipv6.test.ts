// A dual-stack node from the factory to a site whose network is IPv6 first. The cluster was
// installed dual-stack with IPv6 as its primary family: kubelet lists the node's IPv6 address
// first, and br-ex, as the installation left it, holds both. The factory's LAN is IPv4 only: the
// node's uplink profile `uplink` takes a DHCP lease and a static IPv4 default route, IPv6 off. The
// factory's cluster runs on the host (a real kube-apiserver), reached from the node through its
// kubeconfig; the node trusts the factory's signing key.
//
// 1. At the factory, on the factory's IPv4 LAN, `factory prepare` records one internal address per
//    family, IPv6 first, opens the kubelet gate for the factory and makes the node's key. The
//    office signs the site's sticks for this node, their secrets sealed to that key.
// 2. The site's first stick gives the IPv4 internal IP first, as an IPv4 habit writes it: refused
//    when it is admitted, naming the field and the node's primary family, with nothing changed (the
//    factory's network still up).
// 3. The corrected stick, IPv6 first: the node moves to the site's network, routed over IPv6 alone
//    (static address, default route, DNS over IPv6). Kubelet's node IPs IPv6 first, br-ex's first
//    address per family the internal one, the site's names answering in both families, the
//    factory's API name resolving in the network check; and nothing of the factory's IPv4 uplink
//    left: no lease, no IPv4 default route, the uplink profile no longer asking for either.
//
// One boot for the whole story.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_KUBECONFIG } from '../../src/cli/runtime.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { seedRelocatable } from '../factory/env.js';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { installFiles, readFile as readDiskFile } from './disk.js';
import { guestApiForward, guestKubeconfig } from './guest-api.js';
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
import { expectRefusedUnchanged, waitRun } from './journey.js';
import { AGENT_BINARY, AGENT_UNIT, ensureAgentBuild, type NodeImage } from './node-image.js';
import { events, STATE_FILE, waitEvent } from './node-checks.js';
import { announceSkip, endScenario, MIN, skipVm } from './scenario.js';
import { FACTORY_DOMAIN } from './sno-dnsmasq.js';
import { GATEWAY, SITE_HOSTNAME, signedSiteStick } from './sites.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('journey: dual-stack factory to an IPv6-primary site');

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const RECORD = '/etc/sno-relocate/factory.json';
const TRUST_ANCHOR = '/etc/sno-relocate/trust/factory.pub';
const GATE = posix.join(posix.dirname(STATE_FILE), 'kubelet-gate');
/** the cluster's internal IPs, its primary family first */
const INTERNAL = [V6, V4];
/** what qemu's DHCP server leases the factory's uplink (vm.ts) */
const FACTORY_LEASE = '192.0.2.100';
const SITE_DOMAIN = 'sno.v6-site.example.com';

describe.skipIf(skipVm || kubeSkipped)('journey: a dual-stack factory node to an IPv6-primary site', () => {
  let env: ClusterEnv | undefined;
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let dir = '';
  let machineId = '';
  /** the site's sticks, made once prepare has printed the node's key: the IPv4 habit's, and the corrected one */
  let v4First = '';
  let v6First = '';
  const timings: Record<string, number> = {};
  const started = performance.now();

  /** the addresses (global scope) of every link, one family */
  const addresses = async (v: Vm, family: 4 | 6) =>
    (await v.sshOk(`ip -o -${family} addr show scope global | awk '{print $2, $4}'`)).trim();
  /**
   * every NetworkManager profile for ens4: whose port it is, whether it asks for DHCP, its IPv4
   * routes and gateway (what it brings back whenever it is activated, at a reboot among others).
   * A port's profile has no IPv4 settings at all (nmcli prints none): it asks for no route either.
   */
  const ens4Profiles = async (v: Vm) => {
    const fields = 'connection.interface-name,connection.id,connection.master,ipv4.method,ipv4.routes,ipv4.gateway';
    const out = await v.sshOk(
      `nmcli -g UUID connection show | while read -r u; do nmcli -t -f ${fields} connection show "$u"; echo; done`,
    );
    return out
      .split('\n\n')
      .map((profile) => {
        const lines = profile.split('\n').filter((line) => line.includes(':'));
        return new Map(lines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]));
      })
      .filter((p) => p.get('connection.interface-name') === 'ens4')
      .map((p) => ({
        name: p.get('connection.id'),
        controller: p.get('connection.master') ?? '',
        dhcp: p.get('ipv4.method') === 'auto',
        routes: p.get('ipv4.routes') ?? '',
        gateway: p.get('ipv4.gateway') ?? '',
      }));
  };

  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    const kc = env.cluster.kubeConfig();
    await seedRelocatable(kc);
    // the Node as kubelet lists a dual-stack node's InternalIPs: its primary family first
    await kc.makeApiClient(CoreV1Api).patchNodeStatus({
      name: FACTORY_NODE_NAME,
      body: [
        {
          op: 'replace',
          path: '/status/addresses',
          value: [
            { type: 'InternalIP', address: ip(V6) },
            { type: 'InternalIP', address: ip(V4) },
            { type: 'Hostname', address: FACTORY_NODE_NAME },
          ],
        },
      ],
    });
    image = await factoryNode(INTERNAL);
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-journey-v6-'));
    // the factory's signing key, trusted by the node as its MachineConfig installs it
    await promisify(execFile)(await ensureAgentBuild(), ['keygen', '--out', join(dir, 'factory')]);
    await installFiles(image.disk, [
      { path: TRUST_ANCHOR, mode: 0o644, contents: await readFile(join(dir, 'factory.pub')) },
    ]);
    machineId = (await readDiskFile(image.disk, '/etc/machine-id'))!.toString().trim();
    vm = await bootVm({
      name: 'journey-dual-stack-to-ipv6',
      disk: image.disk,
      uplinkNet: UPLINK,
      hostForwards: [guestApiForward(env)],
    });
    await vm.waitSsh();
    timings.bootMs = Math.round(performance.now() - started);
  }, 15 * MIN);

  afterAll(async () => {
    timings.wallMs = Math.round(performance.now() - started);
    await endScenario(vm, image, dir, { scenario: 'journey-dual-stack-to-ipv6', timings });
    await env?.stop();
  }, 5 * MIN);

  it('at the factory, on its IPv4 LAN, prepare records one internal address per family, IPv6 first', async () => {
    const v = vm!;
    const t = performance.now();
    // the factory has run far longer than the agent waits for a stick at boot
    await waitEvent(v, 'configWaiting', { timeoutMs: 5 * MIN });
    // the factory's LAN: a DHCP lease on the uplink, the way out over IPv4 only
    await v.waitFor('ip -4 route show default', (r) => r.stdout.includes(`via ${GATEWAY} dev ens4`), 3 * MIN);
    expect(await addresses(v, 4)).toContain(`ens4 ${FACTORY_LEASE}/24`);
    expect((await v.sshOk('ip -6 route show default')).trim()).toBe('');
    expect(await ens4Profiles(v)).toEqual([
      { name: 'uplink', controller: '', dhcp: true, routes: `0.0.0.0/0 ${GATEWAY}`, gateway: '' },
    ]);
    await v.sshOk(`systemctl stop ${AGENT_UNIT}`);
    await v.sshOk(`mkdir -p ${posix.dirname(NODE_KUBECONFIG)} && cat >${NODE_KUBECONFIG}`, {
      input: guestKubeconfig(env!),
    });
    // br-ex as the installation left it: IPv6 first, then IPv4
    await v.sshOk(
      `ip link add br-ex type bridge && ip addr add ${V6} dev br-ex nodad && ip addr add ${V4} dev br-ex && ip link set br-ex up`,
    );
    const r = await v.ssh(`${AGENT_BINARY} factory prepare`, { timeoutMs: 5 * MIN });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `node ${FACTORY_NODE_NAME}: install address ${V6} and ${V4} on br-ex are the internal IPs`,
    );
    expect(JSON.parse(await v.sshOk(`cat ${RECORD}`))).toMatchObject({
      installAddress: V6,
      installSubnet: 'fd69::/64',
      internalIP: V6,
      secondaryInstallAddress: V4,
      secondaryInstallSubnet: '192.168.127.0/24',
      secondaryInternalIP: V4,
    });
    expect(await v.sshOk(`cat ${GATE}`)).toBe('factory\n');
    // the office signs the site's sticks for this node, its secrets sealed to the key prepare printed;
    // the site routes IPv6 alone: br-ex's IPv4 carries the cluster's internal IPv4 address only
    const recipient = /^node key (age1\S+) /m.exec(r.stdout)?.[1];
    expect(recipient, r.stdout).toBeDefined();
    const stick = async (name: string, internal: string[]) =>
      signedSiteStick(
        dir,
        name,
        spec('v6-site', internal, { ipv6: 'static' }),
        await ensureAgentBuild(),
        join(dir, 'factory.key'),
        undefined,
        ['--bind-machine-id', machineId, '--node-key', recipient!],
      );
    v4First = await stick('v4-first.img', [V4, V6]);
    v6First = await stick('v6-first.img', INTERNAL);
    // the installation's br-ex is gone with the factory network; the site's is NetworkManager's
    await v.sshOk('ip link del br-ex');
    timings.prepareMs = Math.round(performance.now() - t);
  });

  it('a stick with the IPv4 internal IP first: refused at admission, naming the field, nothing changed', async () => {
    const v = vm!;
    const t = performance.now();
    const gate = await v.sshOk(`cat ${GATE}`);
    const network = { v4: await addresses(v, 4), routes: await v.sshOk('ip -4 route show default') };
    const journal = await expectRefusedUnchanged(v, v4First);
    expect(journal).toContain(
      `site-config refused: $.spec.network.internalIP: ${V4} is IPv4, but this node's primary family is IPv6 (recorded by factory prepare in ${RECORD}): give the IPv6 internal IP first and the other in secondaryInternalIP`,
    );
    expect(journal).toMatch(/nothing on the host was changed/);
    // the factory's gate as prepare left it, and the factory's network still the node's
    expect(await v.sshOk(`cat ${GATE}`)).toBe(gate);
    expect({ v4: await addresses(v, 4), routes: await v.sshOk('ip -4 route show default') }).toEqual(network);
    timings.refusedMs = Math.round(performance.now() - t);
  });

  it("the corrected stick, IPv6 first: the node at the IPv6 site, nothing of the factory's IPv4 uplink left", async () => {
    const v = vm!;
    const t = performance.now();
    const runs = (await events(v, 'runFinished')).length;
    await v.plugStick(v6First);
    await waitRun(v, runs + 1);
    timings.relocatedMs = Math.round(performance.now() - t);
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${SITE_HOSTNAME}\n`);
    await expectRelocated(v, SITE_DOMAIN, INTERNAL);
    await expectResolvedInCheck(v);
    // the site's way out: IPv6 alone, DNS over IPv6 at the node's dnsmasq on its internal IPv6 address
    expect((await brExAddresses(v, 6)).map((a) => a.cidr)).toEqual([V6, `${SITE_V6_ADDRESS}/64`]);
    expect(await v.sshOk('ip -6 route show default')).toMatch(new RegExp(`^default via ${V6_GATEWAY} dev br-ex`, 'm'));
    expect((await v.ssh(`ping -6 -c 1 -W 5 ${V6_GATEWAY}`)).code).toBe(0);
    expect(await v.sshOk('grep ^nameserver /etc/resolv.conf')).toBe(`nameserver ${ip(V6)}\n`);
    expect(await v.sshOk(`getent ahostsv4 api.${FACTORY_DOMAIN} | head -n 1`)).toMatch(new RegExp(`^${ip(V4)}\\s`));
    expect(await v.sshOk('cat /etc/default/nodeip-configuration')).toMatch(/^KUBELET_NODEIP_HINT=fd00:c0:2::$/m);
    // nothing of the factory's IPv4 uplink: br-ex's IPv4 is the internal address alone, ens4 a bare
    // port, no lease, no IPv4 way out, and the profile of ens4 asks for none of them at its next start
    expect((await brExAddresses(v, 4)).map((a) => a.cidr)).toEqual([V4]);
    expect(await addresses(v, 4)).toBe(`ens3 10.0.2.15/24\nbr-ex ${V4}`);
    expect((await v.sshOk('ip -4 route show default')).trim()).toBe('');
    expect(await v.sshOk('ip -4 route show')).not.toContain(GATEWAY);
    expect((await ens4Profiles(v)).map(({ name: _, ...profile }) => profile)).toEqual([
      { controller: 'br-ex', dhcp: false, routes: '', gateway: '' },
    ]);
  });
});
