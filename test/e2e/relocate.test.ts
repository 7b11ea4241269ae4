// The relocation on a real node: the VM boots with the site's stick in, the agent applies the site
// network through the real NetworkManager, pins the internal IP, sets the hostname over D-Bus and
// only then lets kubelet start; with the single-node dnsmasq configuration, the site's names
// resolve on the node beside the factory's. Its journal carries every step with message ids and no
// secret. The relocated node under a model of the machine-config daemon (test/e2e/mcd-model): a
// pull-secret update, a MachineConfig that changes core's SSH keys (the site's keys still log in),
// the release-4.17 daemon's forced update and reboot without the stick, a second stick at a later
// boot with a power cut once the gate reopened, br-ex re-activated; nothing Degraded. Then a drift
// reverted by hand under a 4.18.z daemon from before dd559ec99: the daemon recovers by itself.
// Then the same relocation with a power cut at each of 12 points converges to the same node.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELD_FILE, HOLD_ENV } from '../../src/engine/hold.js';
import { KEYS_FILE, SSHD_DROP_IN } from '../../src/steps/ssh-keys.js';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { installFiles, readFileAfterCrash } from './disk.js';
import { AGENT_UNIT, buildNodeImage, type NodeImage } from './node-image.js';
import {
  diffSnapshots,
  events,
  MessageId,
  nodeState,
  type NodeState,
  shq,
  readState,
  type RunState,
  STATE_FILE,
  unitActive,
  unitProps,
  waitInGuest,
} from './node-checks.js';
import {
  announceSkip,
  expectKubeletGated,
  expectSiteNetwork,
  MIN,
  mono,
  NODE_STEPS,
  recordTimings,
  skipVm,
  waitAgentSucceeded,
  waitKubeletActive,
} from './scenario.js';
import { expectSiteNames, laySingleNodeDnsmasq } from './sno-dnsmasq.js';
import { INTERNAL_IP, newSecret, SITE_ADDRESS, SITE_HOSTNAME, SITE_SSH_KEY, siteSpec, siteStick } from './sites.js';
import {
  CONFIG_RELEASE,
  dropConfig,
  FACTORY_SSH_KEY,
  type FactoryNode,
  installMcdModel,
  KUBELET_AUTH_FILE,
  mcdEvents,
  mcdJournal,
  mcdNode,
  openshiftMasterPaths,
  pullSecretJson,
  switchRelease,
  touchForceFile,
  waitMcdSettled,
  waitMcdStarted,
} from './mcd-model/install.js';
import { startTimeServer, type TimeServer } from './time-server.js';
import { MODEL_UNIT, NODE_FILE, STATE_KEY } from './mcd-model/ignition.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('relocation scenarios');

const run = promisify(execFile);
const UNITS = [AGENT_UNIT, KUBELET];
const FACTORY_PULL_SECRET = pullSecretJson({
  'registry.factory.example.com:5000': { auth: Buffer.from('factory-puller:factory-only').toString('base64') },
});
const NEXT_HOSTNAME = 'sno-vm-store7b';
const CORE_IGNITION_KEYS = '/home/core/.ssh/authorized_keys.d/ignition';
/** a key the cluster admin adds to 99-master-ssh later */
const ADMIN_SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKq3Cq8VYdTzSgFzq4oLr5j2XGJ4bPzTqEo0XkU3nWmR admin@cluster';
const NODE_IP_FILES = [
  '/etc/NetworkManager/dispatcher.d/30-sno-relocate-internal-ip',
  '/etc/systemd/system/kubelet.service.d/30-sno-relocate-node-ip.conf',
  '/etc/systemd/system/crio.service.d/30-sno-relocate-node-ip.conf',
];

/** The agent holds at a named point (src/engine/hold.ts) through its unit's environment. */
/**
 * the node steps with nothing to do here: chronyd is off in the image and the site names no NTP, so
 * the clock is judged as it is
 */
const NOTHING_TO_DO: readonly string[] = ['ntp', 'clock'];
const DROP_IN = `/etc/systemd/system/${AGENT_UNIT}.d/95-hold.conf`;
const holdDropIn = (point: string) => `[Service]\nEnvironment=${HOLD_ENV}=${point}\n`;
/** a guest command that sets the hold point of the next boot (or clears it) */
const setHold = (point: string | undefined) =>
  point
    ? `mkdir -p ${posix.dirname(DROP_IN)} && printf '%b' ${JSON.stringify(holdDropIn(point))} >${DROP_IN}`
    : `rm -f ${DROP_IN}`;

/** A power cut: at a hold point of the agent, or the moment a guest-side condition holds. */
interface Cut {
  point?: string;
  watch?: string;
  /** each step's recorded status on the disk after the cut (undefined: not started) */
  expect: Record<string, string | undefined>;
}

describe.skipIf(skipVm)('relocation on a real node', () => {
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let cutVm: Vm | undefined;
  let stickDir = '';
  let stick = '';
  let secondStick = '';
  let reference: NodeState | undefined;
  let mcd: FactoryNode | undefined;
  /** a key of the site's made here, with its private half, to log in as core with */
  let loginKey = { private: '', public: '' };
  /** the keys the cluster's 99-master-ssh gives core, as the admin changes them */
  let clusterKeys = [FACTORY_SSH_KEY];
  /** wall-clock ms of each machine-config daemon scenario, for bench/e2e.ts */
  const mcdTimings: Record<string, number> = {};
  let timeServer: TimeServer | undefined;
  const secret = newSecret();
  /** the cluster's pull secret once the cluster-pull-secret step changed it */
  const sitePullSecret = () => pullSecretJson({ [secret.registry]: { auth: secret.auth } });
  /** core logs in to the node with the site's key (sshd on the node, from the node itself) */
  const loginAsCore = async (v: Vm): Promise<string> => {
    await v.sshOk('umask 077 && cat > /root/site-login', { input: loginKey.private });
    return v.sshOk(
      'ssh -i /root/site-login -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null ' +
        '-o LogLevel=ERROR core@127.0.0.1 id -un',
    );
  };

  beforeAll(async () => {
    image = await buildNodeImage();
    await laySingleNodeDnsmasq(image.disk);
    timeServer = await startTimeServer();
    mcd = await installMcdModel(image.disk, image.machineConfigs, FACTORY_PULL_SECRET, 'release-4.18', timeServer);
    stickDir = await mkdtemp(join(tmpdir(), 'sno-e2e-relocate-'));
    const keyPath = join(stickDir, 'site-login');
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'login@vm-store-0007', '-f', keyPath]);
    loginKey = { private: await readFile(keyPath, 'utf8'), public: (await readFile(`${keyPath}.pub`, 'utf8')).trim() };
    const spec = { ...siteSpec(secret), sshAuthorizedKeys: [SITE_SSH_KEY, loginKey.public] };
    stick = await siteStick(stickDir, 'site.img', spec);
    secondStick = await siteStick(stickDir, 'second.img', { ...spec, hostname: NEXT_HOSTNAME });
  }, 15 * MIN);

  afterAll(async () => {
    for (const v of [vm, cutVm]) {
      if (!v) continue;
      await v.collectArtifacts().catch((e: Error) => console.log(`artifacts: ${e.message}`));
      await v.dispose();
    }
    await image?.dispose();
    await timeServer?.stop();
    if (stickDir) await rm(stickDir, { recursive: true, force: true });
  }, 5 * MIN);

  it('boots with the stick: site network on br-ex, internal IP, hostname over D-Bus, then kubelet', async () => {
    const started = performance.now();
    vm = await bootVm({ name: 'stick-at-boot', uplinkToHost: true, disk: image!.disk, sticks: [stick] });
    const v = vm;
    const sshMs = await v.waitSsh();
    await waitKubeletActive(v);
    const hostToKubeletMs = performance.now() - started;
    await waitAgentSucceeded(v);
    const gate = await expectKubeletGated(v);
    await expectSiteNetwork(v);
    // the site's names in dnsmasq beside the factory's, dnsmasq restarted, both resolving on the node
    await expectSiteNames(v, 'sno.vm-store-0007.example.com');

    // no nmstatectl on this node, so the agent went through NetworkManager's D-Bus API
    expect((await v.ssh('command -v nmstatectl')).code).not.toBe(0);
    // NetworkManager holds the site network as persistent profiles, ens3 stays unmanaged
    const profiles = await v.sshOk('nmcli -t -f NAME,TYPE,DEVICE connection show --active');
    expect(profiles).toMatch(/^br-ex:bridge:br-ex$/m);
    expect(profiles).toMatch(/:802-3-ethernet:ens4$/m);
    expect(await v.sshOk('nmcli -t -f DEVICE,STATE device')).toMatch(/^ens3:unmanaged$/m);
    expect(await v.sshOk('grep -l "^interface-name=br-ex" /etc/NetworkManager/system-connections/*')).not.toBe('');

    // the internal IP: dispatcher script and the kubelet/crio drop-ins
    for (const f of NODE_IP_FILES) expect(await v.sshOk(`stat -c '%U:%G' ${f}`)).toBe('root:root\n');
    expect(await v.sshOk(`stat -c '%a' ${NODE_IP_FILES[0]}`)).toBe('755\n');
    expect(await v.sshOk(`cat ${NODE_IP_FILES[1]}`)).toContain(INTERNAL_IP.split('/')[0]);
    expect(await v.sshOk(`cat ${NODE_IP_FILES[2]}`)).toContain(INTERNAL_IP.split('/')[0]);

    // nodeip-configuration's hint names the site network, written through the agent's sandbox
    expect(await v.sshOk('cat /etc/default/nodeip-configuration')).toMatch(/^KUBELET_NODEIP_HINT=192\.0\.2\.0\b/m);

    // hostname: systemd-hostnamed took the call (it logs the change), and it is static
    expect(
      await v.sshOk(
        'busctl get-property org.freedesktop.hostname1 /org/freedesktop/hostname1 org.freedesktop.hostname1 StaticHostname',
      ),
    ).toBe(`s "${SITE_HOSTNAME}"\n`);
    expect(await v.sshOk('cat /etc/hostname')).toBe(`${SITE_HOSTNAME}\n`);
    expect(await v.sshOk('journalctl -b 0 -u systemd-hostnamed -o cat --no-pager')).toContain(SITE_HOSTNAME);

    // the site's keys for core where sshd reads them and the daemon does not reach; the factory's
    // key where Ignition wrote it, untouched
    expect((await v.sshOk(`cat ${KEYS_FILE}`)).split('\n')).toEqual(
      expect.arrayContaining([SITE_SSH_KEY, loginKey.public]),
    );
    expect(await v.sshOk(`stat -c '%a %U:%G' ${KEYS_FILE} ${SSHD_DROP_IN}`)).toBe('644 root:root\n644 root:root\n');
    expect(await v.sshOk(`cat ${CORE_IGNITION_KEYS}`)).toBe(`${FACTORY_SSH_KEY}\n`);
    expect(await loginAsCore(v)).toBe('core\n');
    // none of the files and units OpenShift's rendered master config declares (release-4.18, from the
    // machine-config operator's templates) was written while the agent ran
    const declared = openshiftMasterPaths(CONFIG_RELEASE);
    expect(declared.length).toBeGreaterThan(60);
    const writtenByAgent = await v.sshOk(
      `since=$(date -d "$(systemctl show -p ExecMainStartTimestamp --value ${AGENT_UNIT})" +%s); ` +
        `for p in ${declared.map(shq).join(' ')}; do ` +
        `[ -e "$p" ] && [ "$(stat -c %Z "$p")" -ge "$since" ] && echo "$p"; done; true`,
    );
    expect(writtenByAgent).toBe('');
    // the node's pull secret is the machine-config daemon's to write, from the cluster's: not the agent's
    expect(await v.sshOk(`cat ${KUBELET_AUTH_FILE}`)).toBe(`${FACTORY_PULL_SECRET}\n`);

    expect((await unitProps(v, KUBELET, ['UnitFileState'])).UnitFileState).toBe('enabled');
    const state = (await readState(v))!;
    expect(state.result).toBe('succeeded');
    for (const s of NODE_STEPS) {
      expect(state.steps[s]?.status).toBe('done');
      // the factory MachineConfig already pins the internal IP and its dispatcher script adds the
      // address as br-ex comes up: that step may find nothing left to do (0 attempts)
      if (s === 'internal-ip') expect(state.steps[s]?.attempts).toBeLessThanOrEqual(1);
      else expect(state.steps[s]?.attempts).toBe(NOTHING_TO_DO.includes(s) ? 0 : 1);
    }

    // timings for bench/e2e.ts: the agent's share separated from boot, on the guest's own clock
    const analyze = await v.sshOk('systemd-analyze time');
    const [runStarted] = await events(v, 'runStarted');
    const [runFinished] = await events(v, 'runFinished');
    reference = await nodeState(v, UNITS);
    await recordTimings('stick-at-boot', {
      hostBootToSshMs: sshMs,
      hostBootToKubeletMs: Math.round(hostToKubeletMs),
      guestKernelToKubeletMs: Math.round(gate.kubeletActiveUs / 1000),
      guestKernelToAgentStartMs: Math.round(gate.agentStartUs / 1000),
      guestAgentProcessMs: Math.round((gate.agentExitUs - gate.agentStartUs) / 1000),
      guestAgentRunMs: Math.round((mono(runFinished!) - mono(runStarted!)) / 1000),
      systemdAnalyze: analyze.split('\n')[0]!.trim(),
    });
  });

  it('journals every step with its message id, and keeps the secret out of the journal and of every other file', async () => {
    const v = vm!;
    const started = await events(v, 'stepStarted');
    // a step ends "finished" when it changed the node, "skipped" when it found nothing to do
    const ended = [...(await events(v, 'stepFinished')), ...(await events(v, 'stepSkipped'))].sort(
      (a, b) => mono(a) - mono(b),
    );
    for (const s of NODE_STEPS) {
      expect(
        started.filter((e) => e.SNO_RELOCATE_STEP === s),
        `started ${s}`,
      ).toHaveLength(1);
      const done = ended.filter((e) => e.SNO_RELOCATE_STEP === s);
      expect(done, `ended ${s}`).toHaveLength(1);
      expect(done[0]!.MESSAGE).toMatch(
        done[0]!.MESSAGE_ID === MessageId.stepFinished ? /step finished/ : /nothing to do/,
      );
      expect(Number(done[0]!.SNO_RELOCATE_DURATION_MS)).toBeGreaterThanOrEqual(0);
      expect(mono(done[0]!)).toBeGreaterThan(mono(started.find((e) => e.SNO_RELOCATE_STEP === s)!));
    }
    // in the order of the run; every step but internal-ip (see above), ntp and clock changed this node
    expect(ended.map((e) => e.SNO_RELOCATE_STEP)).toEqual([...NODE_STEPS]);
    for (const e of ended)
      if (e.SNO_RELOCATE_STEP !== 'internal-ip')
        expect(e.MESSAGE_ID, String(e.SNO_RELOCATE_STEP)).toBe(
          NOTHING_TO_DO.includes(String(e.SNO_RELOCATE_STEP)) ? MessageId.stepSkipped : MessageId.stepFinished,
        );
    expect(await events(v, 'runFinished')).toHaveLength(1);
    expect(await events(v, 'kubeletGateOpened')).toHaveLength(1);
    expect(await events(v, 'stepFailed')).toHaveLength(0);

    const needles = secret.needles.map((n) => `-e '${n}'`).join(' ');
    const inJournal = await v.ssh(`journalctl -b all -o json --no-pager | grep -c -F ${needles}`);
    expect(inJournal.stdout.trim()).toBe('0');
    const files = await v.ssh(
      `grep -rlF --devices=skip ${needles} /etc /var /home /root /run /tmp /usr/local /opt /srv 2>/dev/null`,
    );
    expect(files.stdout.split('\n').filter(Boolean)).toEqual([]);
  });

  it('the machine-config daemon (release-4.18) finds the relocated node as rendered and applies a pull-secret update without a reboot', async () => {
    const started = performance.now();
    const v = vm!;
    // the daemon is a pod: it started once kubelet ran and validated the node against the factory's config
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({
      state: 'Done',
      currentConfig: mcd!.factory.metadata.name,
    });
    // the cluster-pull-secret step changed openshift-config/pull-secret: the pool's next rendered config
    const update = mcd!.render('rendered-master-site-1', sitePullSecret());
    await dropConfig(v, update);
    expect(await waitMcdSettled(v, update.metadata.name), await mcdJournal(v)).toMatchObject({
      state: 'Done',
      currentConfig: update.metadata.name,
    });
    expect(await v.sshOk(`cat ${KUBELET_AUTH_FILE}`)).toBe(`${sitePullSecret()}\n`);
    const mcdEventsSeen = await mcdEvents(v);
    expect(mcdEventsSeen.filter((e) => e.type === 'Warning')).toEqual([]);
    expect(mcdEventsSeen.map((e) => e.reason)).toContain('SkipReboot');
    expect(await unitProps(v, KUBELET, ['ActiveState', 'UnitFileState'])).toEqual({
      ActiveState: 'active',
      UnitFileState: 'enabled',
    });
    mcdTimings.pullSecretUpdate = Math.round(performance.now() - started);
  });

  it("a MachineConfig changing core's SSH keys empties ~/.ssh but the fragment of the daemon; the site's keys still log in", async () => {
    const started = performance.now();
    const v = vm!;
    // the admin adds a key to 99-master-ssh: the pool's next rendered config
    clusterKeys = [FACTORY_SSH_KEY, ADMIN_SSH_KEY];
    // a stray file and a fragment of another tool, as a node may have them
    await v.sshOk(
      `runuser -u core -- sh -c 'echo ${ADMIN_SSH_KEY} > /home/core/.ssh/authorized_keys && echo ${ADMIN_SSH_KEY} > /home/core/.ssh/authorized_keys.d/other-tool'`,
    );
    const update = mcd!.render('rendered-master-site-ssh', sitePullSecret(), clusterKeys);
    await dropConfig(v, update);
    expect(await waitMcdSettled(v, update.metadata.name), await mcdJournal(v)).toMatchObject({
      state: 'Done',
      currentConfig: update.metadata.name,
    });
    // updateSSHKeys: authorized_keys and every fragment but ignition gone, ignition rewritten, no reboot
    expect(await v.sshOk('ls -A /home/core/.ssh /home/core/.ssh/authorized_keys.d')).toBe(
      '/home/core/.ssh:\nauthorized_keys.d\n\n/home/core/.ssh/authorized_keys.d:\nignition\n',
    );
    expect(await v.sshOk(`cat ${CORE_IGNITION_KEYS}`)).toBe(`${FACTORY_SSH_KEY}\n${ADMIN_SSH_KEY}\n`);
    const seen = await mcdEvents(v);
    expect(seen.filter((e) => e.type === 'Warning')).toEqual([]);
    expect(seen.at(-1)?.reason).toBe('SkipReboot');
    expect(await loginAsCore(v)).toBe('core\n');
    mcdTimings.sshKeysChange = Math.round(performance.now() - started);
  });

  it('release-4.17: a forced update rewrites every unit and reboots; without the stick kubelet runs, nothing Degraded', async () => {
    const started = performance.now();
    const v = vm!;
    await switchRelease(v, 'release-4.17');
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({
      state: 'Done',
      currentConfig: 'rendered-master-site-ssh',
    });
    // a second registry in the cluster's pull secret, and the force file an admin sets to get past a drift
    const update = mcd!.render(
      'rendered-master-site-2',
      pullSecretJson({
        [secret.registry]: { auth: secret.auth },
        'quay.vm-store-0007.example.com': { auth: secret.auth },
      }),
      clusterKeys,
    );
    await touchForceFile(v);
    await dropConfig(v, update);
    await v.waitGuestStopped(5 * MIN);
    await v.bootAgain({ sticks: [] });
    await v.waitSsh();
    // kubelet's boot job is done (queued at boot, after the gate's check; the agent waits for a stick)
    await v.waitFor(
      `systemctl list-jobs --no-legend --plain | grep -cE '${KUBELET}|sno-relocate-gate.service'`,
      (r) => r.stdout.trim() === '0',
      5 * MIN,
    );
    expect(await unitProps(v, KUBELET, ['ActiveState', 'UnitFileState'])).toEqual({
      ActiveState: 'active',
      UnitFileState: 'enabled',
    });
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({
      state: 'Done',
      currentConfig: update.metadata.name,
    });
    // the release-4.17 daemon did rewrite kubelet's unit: disabled it, then enabled it as declared
    const before = await v.sshOk(`journalctl -b -1 -u mcd-model.service -o cat --no-pager`);
    expect(before).toContain('Disabling systemd unit kubelet.service before re-writing it');
    expect(before).toMatch(/^Enabled systemd units: \[.*kubelet\.service/m);
    expect(before).toContain('initiating reboot: Node will reboot into config rendered-master-site-2');
    expect((await mcdEvents(v)).filter((e) => e.type === 'Warning')).toEqual([]);
    mcdTimings.forcedUpdateAndRebootWithoutStick = Math.round(performance.now() - started);
  });

  it('a second stick at a later boot closes the gate before kubelet starts; cut once it reopened, the run resumes; nothing Degraded', async () => {
    const started = performance.now();
    const v = vm!;
    await switchRelease(v, 'release-4.18');
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({ state: 'Done' });
    await v.sshOk(`${setHold('after:kubelet')} && sync`);
    await v.shutdown();
    await v.bootAgain({ sticks: [secondStick] });
    await v.waitSsh();
    await waitInGuest(v, `grep -qx 'after:kubelet' ${HELD_FILE} 2>/dev/null`, 8 * MIN);
    const [closed] = await events(v, 'kubeletGateClosed');
    const [opened] = await events(v, 'kubeletGateOpened');
    const hostnameDone = (await events(v, 'stepFinished')).find((e) => e.SNO_RELOCATE_STEP === 'hostname');
    expect(closed, 'the gate closed at this boot').toBeDefined();
    expect(opened, 'the gate opened again').toBeDefined();
    const kubelet = await unitProps(v, KUBELET, ['ActiveState', 'ActiveEnterTimestampMonotonic']);
    expect(kubelet.ActiveState).toBe('active');
    // kubelet did not start at boot: only once the node steps of the new site-config passed
    expect(Number(kubelet.ActiveEnterTimestampMonotonic)).toBeGreaterThan(mono(closed!));
    expect(Number(kubelet.ActiveEnterTimestampMonotonic)).toBeGreaterThan(mono(hostnameDone!));
    expect(Number(kubelet.ActiveEnterTimestampMonotonic)).toBeLessThanOrEqual(mono(opened!));
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${NEXT_HOSTNAME}\n`);
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({ state: 'Done' });

    // the power goes between the opened gate and the cluster steps
    await v.sshOk(`${setHold(undefined)} && sync`);
    await v.powerCut();
    await v.bootAgain();
    await v.waitSsh();
    await waitKubeletActive(v);
    await waitAgentSucceeded(v);
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({
      state: 'Done',
      currentConfig: 'rendered-master-site-2',
    });
    // the gate stayed open at this boot: its marker names the site-config whose node steps passed
    expect(await events(v, 'kubeletGateClosed')).toHaveLength(0);
    expect((await readState(v))!.result).toBe('succeeded');
    expect((await mcdEvents(v)).filter((e) => e.type === 'Warning')).toEqual([]);
    mcdTimings.secondStickAndCutAfterGate = Math.round(performance.now() - started);
  });

  it('br-ex re-activated through NetworkManager keeps the internal IP as its first address', async () => {
    const started = performance.now();
    const v = vm!;
    const primary = (out: string): string[] => {
      const [link] = JSON.parse(out) as { addr_info: { local: string; prefixlen: number; secondary?: boolean }[] }[];
      return (link?.addr_info ?? []).filter((a) => !a.secondary).map((a) => `${a.local}/${a.prefixlen}`);
    };
    for (const cmd of ['nmcli connection up br-ex', 'nmcli connection down br-ex && nmcli connection up br-ex']) {
      await v.sshOk(cmd, { timeoutMs: 3 * MIN });
      const r = await v.waitFor(
        'ip -j -4 addr show dev br-ex',
        (x) =>
          x.code === 0 && primary(x.stdout).includes(`${SITE_ADDRESS}/24`) && primary(x.stdout).includes(INTERNAL_IP),
        2 * MIN,
      );
      expect([cmd, primary(r.stdout)[0]]).toEqual([cmd, INTERNAL_IP]);
    }
    expect(await waitMcdSettled(v, 'rendered-master-site-2')).toMatchObject({ state: 'Done' });
    expect((await mcdEvents(v)).filter((e) => e.type === 'Warning')).toEqual([]);
    mcdTimings.brExReactivated = Math.round(performance.now() - started);
  });

  it('a 4.18.z daemon from before dd559ec99 recovers by itself once a drift is put back, and rewrites kubelet.service as 4.17 does', async () => {
    const started = performance.now();
    const v = vm!;
    await switchRelease(v, 'release-4.18-before-dd559ec99');
    const { state, currentConfig } = await waitMcdStarted(v);
    expect(state, await mcdJournal(v)).toBe('Done');
    const events = (await mcdEvents(v)).length;
    // a drift by hand: the pull secret readable by all; the drift monitor marks the node Degraded
    await v.sshOk(`chmod 0644 ${KUBELET_AUTH_FILE}`);
    await v.waitFor(`cat ${NODE_FILE}`, (r) => r.stdout.includes('"Degraded"'), 2 * MIN);
    expect(await mcdNode(v), await mcdJournal(v)).toMatchObject({
      state: 'Degraded',
      reason: expect.stringContaining(`mode mismatch for file: "${KUBELET_AUTH_FILE}"`),
    });
    // put back, and no new config: the daemon's own re-syncs (1 s doubling to 60 s) find it fixed,
    // then re-apply the config, disabling, rewriting and enabling every unit: about 25 systemctl
    // calls, each seconds long under emulation, so 3 min on this machine and twice that on a slower one
    await v.sshOk(`chmod 0600 ${KUBELET_AUTH_FILE}`);
    await v.waitFor(
      `cat ${NODE_FILE}`,
      (r) => r.code === 0 && (JSON.parse(r.stdout) as Record<string, string>)[STATE_KEY] === 'Done',
      8 * MIN,
    );
    expect(await mcdNode(v), await mcdJournal(v)).toMatchObject({ state: 'Done', currentConfig });
    // this daemon's whole journal: the pod started by the release switch
    const journal = await v.sshOk(
      `journalctl -o cat --no-pager _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value ${MODEL_UNIT})`,
    );
    // the drift, the preflight check of each re-sync that came before the fix, then the re-applied config
    const reasons = (await mcdEvents(v)).slice(events).map((e) => e.reason);
    expect([reasons[0], reasons.at(-1)]).toEqual(['ConfigDriftDetected', 'SkipReboot']);
    expect(new Set(reasons.slice(1, -1))).toEqual(
      new Set(reasons.length > 2 ? ['PreflightConfigDriftCheckFailed'] : []),
    );
    // the re-applied config wrote every unit: kubelet's was disabled, rewritten and enabled again
    expect(journal).toContain('Disabling systemd unit kubelet.service before re-writing it');
    expect(await unitProps(v, KUBELET, ['ActiveState', 'UnitFileState'])).toEqual({
      ActiveState: 'active',
      UnitFileState: 'enabled',
    });
    mcdTimings.driftRevertedUnder418BeforeDd559ec99 = Math.round(performance.now() - started);
  });

  it("an edit of a file only OpenShift's templates declare puts the node Degraded: content mismatch", async () => {
    const started = performance.now();
    const v = vm!;
    // 00-master's NetworkManager defaults (templates/common/_base/files/NetworkManager-ipv6.conf.yaml)
    const file = '/etc/NetworkManager/conf.d/01-ipv6.conf';
    expect(openshiftMasterPaths(CONFIG_RELEASE)).toContain(file);
    // the daemon of the branch: its recovery writes no unit, the file alone is at stake
    await switchRelease(v, 'release-4.18');
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({ state: 'Done' });
    const declared = await v.sshOk(`cat ${file}`);
    await v.sshOk(`echo ipv6.ip6-privacy=2 >> ${file}`);
    await v.waitFor(`cat ${NODE_FILE}`, (r) => r.stdout.includes('"Degraded"'), 2 * MIN);
    expect(await mcdNode(v), await mcdJournal(v)).toMatchObject({
      state: 'Degraded',
      reason: expect.stringContaining(`content mismatch for file "${file}"`),
    });
    await v.sshOk(`cat > ${file}`, { input: declared });
    await v.waitFor(
      `cat ${NODE_FILE}`,
      (r) => r.code === 0 && (JSON.parse(r.stdout) as Record<string, string>)[STATE_KEY] === 'Done',
      3 * MIN,
    );
    mcdTimings.openshiftFileEdited = Math.round(performance.now() - started);
    await recordTimings('mcd-model', mcdTimings);
  });

  it(
    'converges after a power cut at each of 12 points of the node steps',
    async () => {
      // one VM at a time on this machine, and qemu locks the stick image
      if (vm) {
        await vm.collectArtifacts().catch((e: Error) => console.log(`artifacts: ${e.message}`));
        await vm.dispose();
        vm = undefined;
      }
      const dir = join(image!.dir, 'power-cut');
      await run('mkdir', ['-p', dir]);
      const disk = join(dir, 'node.raw');
      await run('cp', ['--sparse=always', image!.disk, disk]);
      // the agent holds at a named point (src/engine/hold.ts) through its unit's environment; while it
      // holds, the next point is set for the next boot and synced, then the power goes
      const CUTS: Cut[] = [
        { point: 'state-write:ssh-keys:running', expect: { 'ssh-keys': undefined } },
        { point: 'after:ssh-keys', expect: { 'ssh-keys': 'done', network: undefined } },
        // the network step recorded as started, nothing applied yet
        { point: 'state-write:network:running', expect: { 'ssh-keys': 'done', network: undefined } },
        // NetworkManager has applied the site network under its checkpoint: neither checked nor committed
        { point: 'network:checkpoint', expect: { network: 'running' } },
        { point: 'state-write:network:done', expect: { network: 'running' } },
        { point: 'after:network', expect: { network: 'done', 'internal-ip': undefined } },
        { point: 'after:internal-ip', expect: { 'internal-ip': 'done', 'site-names': undefined } },
        { point: 'after:site-names', expect: { 'site-names': 'done', hostname: undefined } },
        { point: 'state-write:hostname:running', expect: { 'site-names': 'done', hostname: undefined } },
        { point: 'after:hostname', expect: { hostname: 'done', kubelet: undefined } },
        { point: 'state-write:kubelet:running', expect: { hostname: 'done', kubelet: undefined } },
        // kubelet has just become active
        { watch: unitActive(KUBELET), expect: { hostname: 'done' } },
      ];
      const pointAfter = (i: number) => CUTS.slice(i + 1).find((c) => c.point)?.point;
      await installFiles(disk, [{ path: DROP_IN, contents: holdDropIn(CUTS[0]!.point!) }]);
      cutVm = await bootVm({ name: 'power-cut', uplinkToHost: true, disk, diskMode: 'direct', sticks: [stick] });
      const v = cutVm;
      const stateOnDisk = async (): Promise<RunState> =>
        JSON.parse((await readFileAfterCrash(disk, STATE_FILE))!.toString()) as RunState;

      for (const [i, cut] of CUTS.entries()) {
        if (i > 0) await v.bootAgain();
        await v.waitSsh();
        if (cut.point) {
          await waitInGuest(v, `grep -qx '${cut.point}' ${HELD_FILE} 2>/dev/null`, 8 * MIN);
          await v.sshOk(`${setHold(pointAfter(i))} && sync`);
        } else {
          // the guest resets itself the moment it sees the point: an immediate reset (sysrq b) syncs
          // nothing, which for the disk is a power cut
          await waitInGuest(v, cut.watch!, 8 * MIN, {
            then: `${setHold(pointAfter(i))}; sync; echo b > /proc/sysrq-trigger`,
            intervalS: 0.25,
          });
        }
        await v.powerCut();
        const steps = (await stateOnDisk()).steps;
        const seen = Object.fromEntries(Object.keys(cut.expect).map((s) => [s, steps[s]?.status]));
        expect({ cut: cut.point ?? cut.watch, seen }).toEqual({ cut: cut.point ?? cut.watch, seen: cut.expect });
      }

      await v.bootAgain();
      await v.waitSsh();
      await waitKubeletActive(v);
      await waitAgentSucceeded(v);
      await expectSiteNetwork(v);
      expect(await v.ssh(`test -e ${DROP_IN}`)).toMatchObject({ code: 1 });

      const after = await nodeState(v, UNITS);
      expect(diffSnapshots(reference!.files, after.files)).toEqual([]);
      expect(after.network).toEqual(reference!.network);
      expect(after.hostname).toBe(reference!.hostname);
      expect(after.units).toEqual(reference!.units);
      expect(await v.sshOk('find /etc/NetworkManager/system-connections -type f -empty')).toBe('');
      expect(await v.sshOk('ls -A /var/lib/sno-relocate | grep "\\.tmp$"; true')).toBe('');

      // nothing applied twice: a step recorded as done before a cut was never applied again
      const state = (await readState(v))!;
      expect(state.result).toBe('succeeded');
      expect(state.steps['ssh-keys']).toMatchObject({ status: 'done', attempts: 1 });
      expect(state.steps.hostname).toMatchObject({ status: 'done', attempts: 1 });
      const finished = await events(v, 'stepFinished', 'all');
      for (const s of NODE_STEPS)
        expect(finished.filter((e) => e.SNO_RELOCATE_STEP === s).length, `${s} finished`).toBeLessThanOrEqual(1);
      expect(await v.sshOk('journalctl --list-boots --no-pager | tail -n +2 | wc -l')).toBe(`${CUTS.length + 1}\n`);
      // thirteen boots under software emulation: a bound for a machine shared with other tiers
    },
    30 * MIN,
  );
});
