// From the factory to a store, and on to another store, as one node lives it. The factory's cluster
// runs on the host (a real kube-apiserver with the models of OpenShift's operators), reached from
// the node through its kubeconfig; the node is laid out as the factory's MachineConfigs and
// OpenShift's lay it out, with the machine-config daemon's model; the agent's runs go on past the
// node steps to the cluster steps that carry a site into the cluster, health and in-service.
//
// 1. At the factory: `factory prepare --trust` makes the node relocatable and gives it a key,
//    `factory check` finds it fit to ship, `factory seal --power-off` seals it and powers it off.
// 2. At store A, its first power-on: the RTC 60 days ahead, the factory's time server out of reach.
//    The installer's config media (written by the installer's code, signed at the factory for this
//    node and its secrets sealed to its key) is inserted as the BMC's virtual media: the signature
//    looks expired until chronyd has the store's time, and the node is relocated and in service,
//    its certificates issued on the true time.
// 3. The pool's next rendered config names the agent's next version: the machine-config daemon
//    writes it and reboots, the installer puts the next version in place.
// 4. The node moves to store B (another domain, registry, pull secret and mirrors), with a stick
//    the next version runs: nothing of store A is left, in the cluster or on the node.
// 5. Support's bundle, made on the node, holds both stores' runs and none of their secrets.
//
// One factory boot, and one site boot with the daemon's reboot for the whole story.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_KUBECONFIG } from '../../src/cli/runtime.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { INSTALL_ADDRESS, seedRelocatable } from '../factory/env.js';
import { writeInstallerMedia } from '../ibi/installer-media.js';
import { installFiles } from './disk.js';
import { guestApiForward, guestKubeconfig } from './guest-api.js';
import {
  applyTrustAnchors,
  buildNextAgent,
  domainView,
  factoryPrepare,
  type NextAgent,
  nodeFilesNaming,
  rebootedInto,
  renderNaming,
  signedFolderStick,
  siteView,
  TRUST_ANCHOR,
  waitRun,
} from './journey.js';
import { dropConfig, installMcdModel, mcdJournal, pullSecretJson, waitMcdStarted } from './mcd-model/install.js';
import {
  AGENT_BINARY,
  AGENT_UNIT,
  buildNodeImage,
  ensureAgentBuild,
  INSTALL_LIB,
  type NodeImage,
  nodeOnlyDropIn,
} from './node-image.js';
import { events, waitEvent } from './node-checks.js';
import {
  announceSkip,
  endScenario,
  endVm,
  expectKubeletGated,
  expectSiteNetwork,
  MIN,
  skipVm,
  waitAgentSucceeded,
  waitKubeletActive,
} from './scenario.js';
import {
  GATEWAY,
  newSecret,
  SITE_ADDRESS,
  SITE_HOSTNAME,
  SITE_SSH_KEY,
  siteNmstate,
  siteConfigYaml,
  siteSpec,
  STICK_LABEL,
} from './sites.js';
import { startTimeServer, type TimeServer } from './time-server.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('journey: factory to store and back');

const exec = promisify(execFile);
const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const DAY_MS = 86_400_000;
const RTC_AHEAD_DAYS = 60;
/** how far the node's synchronised clock may be from the host's */
const SKEW_MS = 60_000;
const STATE = '/var/lib/sno-relocate';
const SEAL_OUT = '/var/tmp/factory-seal.out';
/** the BMC's virtual CD drive: an IDE CD-ROM with no medium, present from power-on */
const CD = 'vcd0';
/** the factory's rendered config writes this pull secret into kubelet's auth file */
const FACTORY_PULL_SECRET = pullSecretJson({});
/**
 * The steps of every run: the node's, then what carries a site into the cluster (routes, pull
 * secret, mirrors, domain), health and in-service, whose stability window is short here: the
 * models settle in seconds. The registry check, the rename and the identity steps need a registry
 * and a kubelet this VM does not have.
 */
const RUN = 'node,routes,cluster-pull-secret,mirrors,domain,health,in-service --health-stable 5';
const RELEASE = 'quay.io/openshift-release-dev/ocp-release';

const STORE_A = {
  domain: 'store-a.example.com',
  hostname: 'sno-store-a',
  registry: 'registry.store-a.example.com:5000',
  secret: newSecret(),
};
const STORE_B = {
  domain: 'store-b.example.com',
  registry: 'registry.store-b.example.com:5000',
  secret: newSecret(),
};

describe.skipIf(skipVm || kubeSkipped)('journey: from the factory to a store and on to another', () => {
  let env: ClusterEnv | undefined;
  let image: NodeImage | undefined;
  let factoryClock: TimeServer | undefined;
  let storeClock: TimeServer | undefined;
  let next: NextAgent | undefined;
  /** the node at the factory, then the same node (the same disk) powered on at the stores */
  let factory: Vm | undefined;
  let store: Vm | undefined;
  let dir = '';
  let agent = '';
  const media = { storeA: '', storeB: '' };
  const timings: Record<string, number> = {};
  const started = performance.now();
  const since = (t: number) => Math.round(performance.now() - t);
  const journal = (v: Vm) => v.sshOk(`journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager`);

  beforeAll(async () => {
    env = await startFactory({ seed: { csrs: false } });
    await seedRelocatable(env.cluster.kubeConfig());
    image = await buildNodeImage();
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-journey-factory-'));
    agent = await ensureAgentBuild();
    await exec(agent, ['keygen', '--out', join(dir, 'factory')]);
    next = await buildNextAgent(dir);
    factoryClock = await startTimeServer();
    storeClock = await startTimeServer();
    await installMcdModel(image.disk, image.machineConfigs, FACTORY_PULL_SECRET, 'release-4.18', factoryClock);
    await installFiles(image.disk, [
      { path: NODE_KUBECONFIG, mode: 0o600, contents: guestKubeconfig(env) },
      nodeOnlyDropIn(image.payload, RUN),
      ...next.entries,
    ]);
    factory = await bootVm({
      name: 'journey-factory',
      disk: image.disk,
      diskMode: 'direct',
      uplinkToHost: true,
      hostForwards: [guestApiForward(env)],
    });
    await factory.waitSsh();
    timings.factoryBootMs = since(started);
  }, 15 * MIN);

  afterAll(async () => {
    timings.wallMs = since(started);
    await endVm(factory);
    await endScenario(store, image, dir, { scenario: 'journey-factory-to-store-and-back', timings });
    await factoryClock?.stop();
    await storeClock?.stop();
    await env?.stop();
  }, 5 * MIN);

  it('factory prepare: the install address read on br-ex, the kubelet gate open, a node key, the trust anchor', async () => {
    const v = factory!;
    const t = performance.now();
    const r = await factoryPrepare(v, readFileSync(join(dir, 'factory.pub'), 'utf8'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`node sno-factory: install address ${INSTALL_ADDRESS} on br-ex is the internal IP`);
    expect(r.stdout).toMatch(/^MachineConfig 50-master-sno-relocate: created; REBOOT/m);
    expect(await v.sshOk(`cat ${STATE}/kubelet-gate`)).toBe('factory\n');
    const recipient = /^node key (age1\S+) /m.exec(r.stdout)?.[1];
    expect(recipient, r.stdout).toBeDefined();
    // the machine-config daemon's part: the trust anchor of the MachineConfig prepare created; the pool updated
    expect(await applyTrustAnchors(v, env!)).toEqual([TRUST_ANCHOR]);
    timings.prepareMs = since(t);

    // the office makes each store's media for this node: bound to its machine-id, its secrets
    // sealed to its key, signed with the factory's key; store A's signature valid for 30 days
    const machineId = (await v.sshOk('cat /etc/machine-id')).trim();
    const key = join(dir, 'factory.key');
    const forNode = ['--bind-machine-id', machineId, '--node-key', recipient!];
    const installer = writeInstallerMedia(join(dir, 'store-a'), {
      clusterName: 'sno',
      baseDomain: STORE_A.domain,
      hostname: STORE_A.hostname,
      pullSecret: { auths: { [STORE_A.registry]: { auth: STORE_A.secret.auth } } },
      sshKey: SITE_SSH_KEY,
      machineNetwork: '192.0.2.0/24',
      releaseRegistry: 'quay.io',
      networkConfig: siteNmstate(),
      // the store's time server, as the guest reaches it (the installer writes `server <source> iburst`)
      additionalNTPSources: [`${GATEWAY} port ${storeClock!.port}`],
      imageDigestSources: [{ source: RELEASE, mirrors: [`${STORE_A.registry}/ocp/release`] }],
      kubeadminPasswordHash: '$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy',
    });
    const notAfter = new Date(Date.now() + 30 * DAY_MS).toISOString();
    media.storeA = await signedFolderStick(dir, installer.mediaDir, agent, key, ['--not-after', notAfter, ...forNode], {
      fs: 'iso9660',
      fileName: 'imagebasedconfig.iso',
    });
    const storeB = join(dir, 'store-b');
    await mkdir(storeB);
    const specB = {
      ...siteSpec(STORE_B.secret),
      baseDomain: STORE_B.domain,
      pullSecret: { auths: { [STORE_B.registry]: { auth: STORE_B.secret.auth } } },
      imageDigestMirrors: [{ source: RELEASE, mirrors: [`${STORE_B.registry}/ocp/release`] }],
      chronyConfig: `${storeClock!.serverLine}\n`,
    };
    await writeFile(join(storeB, 'site-config.yaml'), siteConfigYaml(specB));
    media.storeB = await signedFolderStick(dir, storeB, agent, key, forNode, { fs: 'ext4', fileName: 'store-b.img' });
  });

  it('factory check: fit to ship, nothing changed', async () => {
    const v = factory!;
    const before = await v.sshOk(`ls -A ${STATE}`);
    const r = await v.ssh(`${AGENT_BINARY} factory check`, { timeoutMs: 5 * MIN });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ok {6}trust anchors: /m);
    expect(r.stdout).toMatch(/^ok {6}machine config pool: /m);
    expect(r.stdout).toContain('\nfit to ship\n');
    expect(await v.sshOk(`ls -A ${STATE}`)).toBe(before);
  });

  it('factory seal: sealed, and powered off through systemd', async () => {
    const v = factory!;
    const t = performance.now();
    const from = v.qmp!.events.length;
    // the power off ends the session: the report goes to a file on the node, written before it
    await v.ssh(`${AGENT_BINARY} factory seal --shelf-days 20 --power-off >${SEAL_OUT} 2>&1`, { timeoutMs: 5 * MIN });
    const shutdown = await v.qmp!.waitEvent('SHUTDOWN', () => true, 5 * MIN, from);
    await v.waitGuestStopped(5 * MIN);
    timings.sealToPowerOffMs = since(t);
    expect(shutdown.data).toMatchObject({ guest: true, reason: 'guest-shutdown' });
    expect(v.exit).toEqual({ code: 0, signal: null });
    // the factory's time server stays at the factory
    await factoryClock!.stop();
    factoryClock = undefined;
  });

  it("store A, RTC 60 days ahead: the installer's media through the BMC relocates the node on the true time", async () => {
    const t = performance.now();
    const bootAt = Date.now();
    const rtc = new Date(Date.now() + RTC_AHEAD_DAYS * DAY_MS).toISOString().slice(0, 19);
    store = await bootVm({
      name: 'journey-factory-to-store-and-back',
      disk: image!.disk,
      diskMode: 'direct',
      uplinkToHost: true,
      hostForwards: [guestApiForward(env!)],
      qemuArgs: ['-rtc', `base=${rtc}`, '-device', `ide-cd,bus=ide.1,unit=0,id=${CD}`],
    });
    const v = store;
    await v.waitSsh();
    // what seal printed before it powered the node off
    const report = await v.sshOk(`cat ${SEAL_OUT}`);
    expect(report).toContain('\nfit to ship\n');
    expect(report).toMatch(/^sealed at \S+: cleared .*kubelet-gate.* from \/var\/lib\/sno-relocate;/m);
    expect(report).toContain('powering off now: poweroff.target over D-Bus');
    // the node wakes up 60 days ahead
    expect(Number((await v.sshOk('date +%s')).trim()) * 1000 - Date.now()).toBeGreaterThan(
      (RTC_AHEAD_DAYS - 1) * DAY_MS,
    );
    // the BMC inserts the media once the node's boot-time wait for a site-config is over
    await v.waitFor(
      `journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager | grep -q 'for a site-config'`,
      (r) => r.code === 0,
      5 * MIN,
    );
    await v.sshOk(`systemctl stop ${AGENT_UNIT}`);
    await v.qmp!.execute('blockdev-change-medium', {
      id: CD,
      filename: media.storeA,
      format: 'raw',
      'read-only-mode': 'read-only',
    });
    await waitKubeletActive(v);
    await waitAgentSucceeded(v, 15 * MIN);
    timings.storeABootToInServiceMs = since(t);
    const [found] = await events(v, 'configFound');
    expect(found!.MESSAGE).toContain(`site-config found at /run/sno-relocate/${STICK_LABEL}`);
    expect(await v.sshOk('readlink -f /dev/disk/by-label/cluster-config')).toBe('/dev/sr0\n');
    const text = await journal(v);
    expect(text).toMatch(/^INFO +site-config signed by trusted key factory\.pub /m);
    // the signature looked expired on the RTC's time; chronyd set the store's time, and it was judged again
    expect(text).toMatch(
      /WARN {2}site-config signature expired on \S+ on the node's clock, which chronyd has not synchronised: judged again once it has/,
    );
    expect(text).toContain('[clock] site-config.sig: valid on the clock chronyd synchronised');
    expect(Math.abs(Number((await v.sshOk('date +%s')).trim()) * 1000 - Date.now())).toBeLessThan(SKEW_MS);
    // the store's node: its hostname, its network, kubelet let through by the agent
    await expectKubeletGated(v);
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${STORE_A.hostname}\n`);
    const brEx = JSON.parse(await v.sshOk('ip -j -4 addr show dev br-ex')) as { addr_info: { local: string }[] }[];
    expect(brEx[0]!.addr_info.map((a) => a.local)).toContain(SITE_ADDRESS);

    // in the cluster: store A's names, issued on the true time (on the RTC's they would start 60 days on)
    const names = await domainView(env!);
    expect(Object.keys(names.certificates)).toHaveLength(5);
    for (const [secret, hosts] of Object.entries(names.certificates)) {
      expect([secret, hosts.some((n) => n.endsWith(`.sno.${STORE_A.domain}`))]).toEqual([secret, true]);
      expect(names.starts[secret]!).toBeGreaterThan(bootAt - 2 * 60 * MIN);
      expect(names.starts[secret]!).toBeLessThan(Date.now());
    }
    expect(names.configs).toContain(`apps.sno.${STORE_A.domain}`);
    const site = await siteView(env!);
    expect(site.routes.filter((h) => h.endsWith(`.apps.sno.${STORE_A.domain}`)).length).toBeGreaterThan(0);
    // the pull secret, sealed to the node's key on the media, opened on the node
    expect(site.pullSecret[STORE_A.registry]?.auth).toBe(STORE_A.secret.auth);
    expect(site.mirrorSets).toContain(`${STORE_A.registry}/ocp/release`);
    // in service: health and in-service done, and the shipment seal recorded
    const status = await v.sshOk(`${AGENT_BINARY} status`);
    expect(status).toMatch(/^Result: {3}succeeded/m);
    expect(status).toMatch(/^health +done /m);
    expect(status).toMatch(/^in-service +done /m);
    expect(status).toMatch(
      /^Shipped: {2}\d{4}-\d\d-\d\dT\S+ \(factory seal; certificates checked for 20 days on the shelf\)$/m,
    );
    // the machine-config daemon, started with kubelet, finds the node as its config declares it
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({ state: 'Done' });
  });

  it("the pool's next config names the agent's next version: the daemon reboots, the installer puts it in place", async () => {
    const v = store!;
    const t = performance.now();
    const update = await renderNaming('rendered-master-agent-next', next!.imageNext, FACTORY_PULL_SECRET);
    await dropConfig(v, update);
    await rebootedInto(v, update.metadata.name, []);
    timings.upgradeMs = since(t);
    expect(await v.sshOk('cat /etc/sno-relocate/install.env')).toContain(`SNO_RELOCATE_IMAGE=${next!.imageNext}`);
    expect((await v.sshOk(`${AGENT_BINARY} --version`)).trim()).toBe(next!.versionNext);
    expect((await v.sshOk(`cat ${INSTALL_LIB}/installed-image`)).trim()).toBe(next!.imageNext);
    expect((await v.sshOk(`${INSTALL_LIB}/sno-relocate.previous --version`)).trim()).toBe(next!.versionN);
    // still store A's node after the reboot, and the next version says so
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${STORE_A.hostname}\n`);
    expect(await v.sshOk(`${AGENT_BINARY} status`)).toMatch(new RegExp(`^Agent: +${next!.versionNext}$`, 'm'));
  });

  it('moved to store B: another domain, registry, pull secret and mirrors; nothing of store A left', async () => {
    const v = store!;
    const t = performance.now();
    await waitEvent(v, 'configWaiting', { timeoutMs: 5 * MIN });
    const runs = (await events(v, 'runFinished')).length;
    await v.plugStick(media.storeB);
    await waitRun(v, runs + 1);
    timings.storeBMs = since(t);
    await expectSiteNetwork(v);
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${SITE_HOSTNAME}\n`);
    const status = await v.sshOk(`${AGENT_BINARY} status`);
    expect(status).toMatch(new RegExp(`^Agent: +${next!.versionNext}$`, 'm'));
    expect(status).not.toContain('Run by:');
    expect(status).toMatch(/^in-service +done /m);

    const names = await domainView(env!);
    expect(Object.keys(names.certificates)).toHaveLength(5);
    for (const [secret, hosts] of Object.entries(names.certificates)) {
      expect([secret, hosts.some((n) => n.endsWith(`.sno.${STORE_B.domain}`))]).toEqual([secret, true]);
      expect([secret, hosts.filter((n) => n.includes(STORE_A.domain))]).toEqual([secret, []]);
    }
    expect(names.configs).toContain(`apps.sno.${STORE_B.domain}`);
    // the named certificates and the ingress domain: store A's names gone
    expect(names.configs).not.toContain(STORE_A.domain);
    const site = await siteView(env!);
    expect(site.routes.filter((h) => h.includes(STORE_A.domain))).toEqual([]);
    expect(site.routes.filter((h) => h.endsWith(`.apps.sno.${STORE_B.domain}`)).length).toBeGreaterThan(0);
    // the pull secret replaced: store B's registry, none of store A's entries or credentials
    expect(Object.keys(site.pullSecret)).not.toContain(STORE_A.registry);
    expect(site.pullSecret[STORE_B.registry]?.auth).toBe(STORE_B.secret.auth);
    expect(JSON.stringify(site.pullSecret)).not.toContain(STORE_A.secret.auth);
    expect(site.mirrorSets).toContain(`${STORE_B.registry}/ocp/release`);
    expect(site.mirrorSets).not.toContain(STORE_A.registry);
    // on the node: no file names store A's domain or registry
    for (const gone of [STORE_A.domain, STORE_A.registry])
      expect([gone, await nodeFilesNaming(v, gone)]).toEqual([gone, []]);
  });

  it("support's bundle: both stores' runs from the node's journal, none of their secrets", async () => {
    const v = store!;
    const t = performance.now();
    await v.sshOk(`${AGENT_BINARY} support-bundle --out /root/bundle.tar.gz`, { timeoutMs: 5 * MIN });
    timings.supportBundleMs = since(t);
    const runs = await v.sshOk(`tar -xzOf /root/bundle.tar.gz --wildcards '*journal/sno-relocate.txt'`);
    // store A's run by version N, in the boot before the daemon's reboot, and store B's by N+1
    expect(runs.match(/site-config signed by trusted key factory\.pub/g)).toHaveLength(2);
    const all = await v.sshOk('tar -xzOf /root/bundle.tar.gz');
    for (const needle of [...STORE_A.secret.needles, ...STORE_B.secret.needles]) expect(all).not.toContain(needle);
  });
});
