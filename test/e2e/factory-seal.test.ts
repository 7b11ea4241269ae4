// From the factory to the site on a real node. The node image laid out as the factory
// MachineConfigs lay it out boots without a stick; the factory cluster's real kube-apiserver runs on
// the host, reached from the guest through its node kubeconfig. In the guest: `factory prepare
// --trust` reads the install address on a real br-ex, opens the kubelet gate for the factory and
// puts the factory's signing key into its MachineConfig; a site-config left on the node makes
// `factory seal --power-off` refuse (exit 1) and change nothing; without it the node is sealed
// (state folder cleared, gate closed) and powers itself off through systemd's D-Bus API: qemu
// reports the guest's own shutdown and exits by itself. The next boot, with a stick nobody signed,
// is refused (exit 3) and changes nothing; the site's signed stick, plugged in while the node runs,
// relocates it: kubelet held until the node steps passed, and `status` shows the shipment beside
// the run's result. Support's bundle, made on the node after it, reads its real journal.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_KUBECONFIG } from '../../src/cli/runtime.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { INSTALL_ADDRESS, seedRelocatable } from '../factory/env.js';
import { enableUnit, installFiles } from './disk.js';
import { AGENT_BINARY, AGENT_UNIT, buildNodeImage, ensureAgentBuild, type NodeImage } from './node-image.js';
import { applyTrustAnchors, factoryPrepare, TRUST_ANCHOR } from './journey.js';
import { diffSnapshots, events, NODE_TREES, shq, snapshotTrees, waitEvent } from './node-checks.js';
import {
  announceSkip,
  endVm,
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
import { newSecret, SITE_HOSTNAME, siteConfigYaml, siteSpec, siteStick, STICK_LABEL } from './sites.js';
import { makeStick } from './stick.js';
import { guestApiForward, guestKubeconfig } from './guest-api.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('factory seal scenario');

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const WATCHER = 'sno-relocate-watch.service';
const STATE = '/var/lib/sno-relocate';
const LEFT_SITE_CONFIG = '/etc/sno-relocate/site-config.yaml';
const SEAL_OUT = '/var/tmp/factory-seal.out';
const SEAL = `${AGENT_BINARY} factory seal --shelf-days 20 --power-off`;

describe.skipIf(skipVm || kubeSkipped)('sealed at the factory, relocated at the site', () => {
  let env: ClusterEnv | undefined;
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let dir = '';
  /** the site's stick, sealed to the node's key once prepare made it, and signed with the factory's key */
  let stick = '';
  let spec: Record<string, unknown> = {};
  /** the same site-config, unsigned: any stick someone could plug in */
  let unsigned = '';
  const timings: Record<string, number> = {};
  /** the site's folder as the factory signs it for the node: sealed to its key, bound to its machine-id */
  const sealedSiteStick = async (recipient: string, machineId: string): Promise<string> => {
    const folder = await mkdtemp(join(tmpdir(), 'sno-e2e-sealed-'));
    try {
      await writeFile(join(folder, 'site-config.yaml'), siteConfigYaml(spec));
      const sign = ['sign', '--key', join(dir, 'factory.key'), '--bind-machine-id', machineId, '--node-key', recipient];
      await promisify(execFile)(await ensureAgentBuild(), [...sign, folder]);
      const files = ['site-config.yaml', 'site-config.sig'];
      return await makeStick({
        dir,
        fileName: 'site.img',
        label: STICK_LABEL,
        files: await Promise.all(
          files.map(async (name) => ({ name, contents: await readFile(join(folder, name), 'utf8') })),
        ),
      });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  };
  const stateFolder = async () => (await vm!.sshOk(`ls -A ${STATE}`)).split('\n').filter(Boolean).sort();

  beforeAll(async () => {
    const started = performance.now();
    env = await startFactory({ models: false, seed: { csrs: false } });
    await seedRelocatable(env.cluster.kubeConfig());
    image = await buildNodeImage();
    // the watcher unit as the MachineConfig installs it (the suite's image masks it), kept from
    // starting by a drop-in: it reaches only the node's own API on localhost, and there is none here
    const watcher = image.payload.entries.find((e) => e.path === `/etc/systemd/system/${WATCHER}`);
    if (!watcher || !('contents' in watcher)) throw new Error(`the MachineConfigs carry no ${WATCHER}`);
    await installFiles(image.disk, [
      watcher,
      {
        path: `/etc/systemd/system/${WATCHER}.d/90-vm-no-api.conf`,
        mode: 0o644,
        contents: '# VM end-to-end suite: no API server on this node\n[Unit]\nConditionPathExists=/run/vm-e2e-no-api\n',
      },
    ]);
    await enableUnit(image.disk, WATCHER);
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-factory-'));
    // the factory's signing key, made and used by the executable under test
    const agent = await ensureAgentBuild();
    await promisify(execFile)(agent, ['keygen', '--out', join(dir, 'factory')]);
    spec = siteSpec(newSecret());
    unsigned = await siteStick(dir, 'unsigned.img', spec);
    vm = await bootVm({
      name: 'factory-seal',
      disk: image.disk,
      hostForwards: [guestApiForward(env)],
    });
    await vm.waitSsh();
    timings.factoryBootMs = Math.round(performance.now() - started);
  }, 15 * MIN);

  afterAll(async () => {
    await endVm(vm);
    await image?.dispose();
    await env?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    await recordTimings('factory-seal', timings);
  }, 5 * MIN);

  it("prepare reads the install address on the node's br-ex and opens the kubelet gate for the factory", async () => {
    const v = vm!;
    const started = performance.now();
    await v.sshOk(`mkdir -p ${posix.dirname(NODE_KUBECONFIG)} && cat >${NODE_KUBECONFIG}`, {
      input: guestKubeconfig(env!),
    });
    const r = await factoryPrepare(v, readFileSync(join(dir, 'factory.pub'), 'utf8'));
    expect(r.code, r.stderr).toBe(0);
    // a node with a key takes its secrets sealed to it only: the site's stick is made for this node
    const recipient = /^node key (age1\S+) /m.exec(r.stdout)?.[1];
    expect(recipient, r.stdout).toBeDefined();
    stick = await sealedSiteStick(recipient!, (await v.sshOk('cat /etc/machine-id')).trim());
    expect(r.stdout).toContain(`node sno-factory: install address ${INSTALL_ADDRESS} on br-ex is the internal IP`);
    expect(r.stdout).toMatch(/^MachineConfig 50-master-sno-relocate: created; REBOOT/m);
    expect(JSON.parse(await v.sshOk('cat /etc/sno-relocate/factory.json'))).toMatchObject({
      installAddress: INSTALL_ADDRESS,
      installSubnet: '192.168.127.0/24',
    });
    expect(await v.sshOk(`cat ${STATE}/kubelet-gate`)).toBe('factory\n');
    // the machine-config daemon's part, which does not run here: the trust anchor written; the pool updated
    expect(await applyTrustAnchors(v, env!)).toEqual([TRUST_ANCHOR]);
    expect(await v.sshOk(`cat ${TRUST_ANCHOR}`)).toBe(readFileSync(join(dir, 'factory.pub'), 'utf8'));
    timings.prepareMs = Math.round(performance.now() - started);
  });

  it('a site-config left on the node: not fit, not sealed, not powered off, nothing changed', async () => {
    const v = vm!;
    await v.sshOk(`cat >${LEFT_SITE_CONFIG}`, { input: siteConfigYaml(siteSpec(newSecret())) });
    const before = await stateFolder();
    const r = await v.ssh(SEAL, { timeoutMs: 5 * MIN });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain(`FAIL    no site-config: ${LEFT_SITE_CONFIG} is on the node`);
    expect(r.stdout).toContain('NOT fit to ship');
    expect(r.stdout).toContain('not sealed: nothing on the node was changed');
    expect(r.stdout).not.toContain('powering off');
    expect(await stateFolder()).toEqual(before);
    expect(await v.sshOk(`cat ${STATE}/kubelet-gate`)).toBe('factory\n');
    // no shutdown under way: the system still running, no job queued, qemu still there
    expect((await v.ssh('systemctl is-system-running')).stdout.trim()).toMatch(/^(running|degraded)$/);
    expect(await v.sshOk('systemctl list-jobs --no-legend --plain')).not.toContain('poweroff.target');
    expect(v.running).toBe(true);
    await v.sshOk(`rm ${LEFT_SITE_CONFIG}`);
  });

  it('seals a fit node and powers it off through systemd: qemu sees the guest shut itself down', async () => {
    const v = vm!;
    const started = performance.now();
    const since = v.qmp!.events.length;
    // the power off ends the session: the report goes to a file on the node, written before it
    await v.ssh(`${SEAL} >${SEAL_OUT} 2>&1`, { timeoutMs: 5 * MIN });
    const shutdown = await v.qmp!.waitEvent('SHUTDOWN', () => true, 5 * MIN, since);
    await v.waitGuestStopped(5 * MIN);
    timings.sealToPowerOffMs = Math.round(performance.now() - started);
    // the guest's own power off (a reset would say guest-reset), and qemu exited by itself
    expect(shutdown.data).toMatchObject({ guest: true, reason: 'guest-shutdown' });
    expect(v.exit).toEqual({ code: 0, signal: null });
  });

  it('at the site, a stick nobody signed: refused (exit 3), nothing changed, kubelet held', async () => {
    const v = vm!;
    await v.bootAgain({ sticks: [] });
    await v.waitSsh();
    // what seal printed before it powered the node off, and systemd's orderly shutdown that followed
    const report = await v.sshOk(`cat ${SEAL_OUT}`);
    expect(report).toMatch(/^ok {6}trust anchors: /m);
    expect(report).toMatch(/^ok {6}machine config pool: /m);
    expect(report).toContain('\nfit to ship\n');
    expect(report).toMatch(/^sealed at \S+: cleared .*kubelet-gate.* from \/var\/lib\/sno-relocate;/m);
    expect(report).toContain('powering off now: poweroff.target over D-Bus');
    expect(await v.sshOk('journalctl -b -1 -o cat --no-pager _PID=1 | tail -n 200')).toMatch(
      /Reached target shutdown\.target|System Shutdown/,
    );
    await waitEvent(v, 'configWaiting', { timeoutMs: 5 * MIN });
    const trees = await snapshotTrees(v, NODE_TREES);
    const hostname = await v.sshOk('hostnamectl hostname');
    const id = await v.plugStick(unsigned);
    await waitAgentExited(v, '3/');
    const [untrusted] = await events(v, 'configUntrusted');
    expect(untrusted!.MESSAGE).toMatch(
      /^ERROR site-config refused: site-config not signed by a trusted key: the folder has no site-config\.sig; nothing on the host was changed /,
    );
    expect(diffSnapshots(trees, await snapshotTrees(v, NODE_TREES))).toEqual([]);
    await expectNodeHeld(v, hostname);
    await v.unplugStick(id);
  });

  it("the site's signed stick, plugged in, relocates the node, kubelet held until the node steps passed", async () => {
    const v = vm!;
    const started = performance.now();
    await v.plugStick(stick);
    await waitEvent(v, 'runStarted', { timeoutMs: 5 * MIN });
    await waitKubeletActive(v);
    await waitAgentSucceeded(v);
    timings.sitePlugToRelocatedMs = Math.round(performance.now() - started);
    await expectKubeletGated(v);
    await expectSiteNetwork(v);
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${SITE_HOSTNAME}\n`);
    expect(await v.sshOk(`journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager`)).toMatch(
      /^INFO +site-config signed by trusted key factory\.pub /m,
    );
    const status = await v.sshOk(`${AGENT_BINARY} status`);
    expect(status).toMatch(
      /^Shipped: {2}\d{4}-\d\d-\d\dT\S+ \(factory seal; certificates checked for 20 days on the shelf\)$/m,
    );
    // the power-on-by date seal recorded, shown at the site
    expect(status).toMatch(/^Shelf: {4}power on by \d{4}-\d\d-\d\d: Secret \S+ \(.+\) expires \d{4}-\d\d-\d\d /m);
    // the VM runs the node steps only (no cluster at the site here): a partial run, every node step done
    expect(status).toMatch(/^Result: {3}succeeded \(partial run\)$/m);
    expect(status).toMatch(/^kubelet +done +1 /m);
    expect(await v.sshOk(`ls -A ${STATE} | grep -c ${shq('^shipment.json$')}`)).toBe('1\n');
  });

  it("support's bundle reads the node's real journal: each part under its program's own identifier, no secret", async () => {
    const v = vm!;
    const credential = Buffer.from('robot:S3cret-in-the-journal').toString('base64');
    const pullSecret = `{"auths":{"q":{"auth":"${credential}"}}}`;
    // the machine-config daemon logs through the logger with no tag, so journald files it under root
    // (src/support/bundle.ts cites the daemon's code); CRI-O logs as its unit, crio.service (no CRI-O
    // runs here: a transient unit of that name writes as it would)
    await v.sshOk(`logger ${shq(`machine-config-daemon[4242]: writing pull secret ${pullSecret}`)}`);
    await v.sshOk(
      `systemd-run --unit=crio.service --wait --collect echo ${shq(`level=debug msg="GET https://q/v2/ Authorization: Basic ${credential}"`)}`,
    );
    await v.sshOk('journalctl --sync');
    await v.sshOk(`${AGENT_BINARY} support-bundle --out /root/bundle.tar.gz`, { timeoutMs: 5 * MIN });
    const read = (entry: string) => v.sshOk(`tar -xzOf /root/bundle.tar.gz --wildcards ${shq(`*${entry}`)}`);
    // what ran for real at the site: the agent's unit, kubelet started by the agent, br-ex brought up
    expect(await read('journal/sno-relocate.txt')).toMatch(/site-config signed by trusted key factory\.pub/);
    expect(await read('journal/kubelet.txt')).toMatch(/Started kubelet\.service/);
    expect(await read('journal/NetworkManager.txt')).toMatch(/br-ex/);
    const daemon = await read('journal/machine-config-daemon.txt');
    expect(daemon).toContain('machine-config-daemon[4242]: writing pull secret');
    expect(await read('journal/crio.txt')).toContain('level=debug msg="GET https://q/v2/ Authorization: Basic');
    expect(await v.sshOk('tar -xzOf /root/bundle.tar.gz')).not.toContain(credential);
  });
});
