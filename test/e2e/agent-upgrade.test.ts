// Upgrading the agent through the MachineConfig, and rolling it back, on one booted node. Version N
// (dist/) is installed as the factory MachineConfigs install it and relocates the node. The pool's
// next rendered config names the image of version N+1 (the same code built with another version
// by build.sh): the machine-config daemon's model writes the new install.env and reboots, as the
// real daemon does for a file outside its no-reboot policies (test/e2e/mcd-model); the installer
// puts N+1 in place and keeps N. A second stick, in the node at that one reboot, is run by N+1:
// the agent's unit is ordered after the installer's. Last, the config naming N again with the
// registry unreachable: the installer puts N back from the kept binary, asking no registry.
//
// The one boundary that cannot run here is the registry and podman pulling from it: a stand-in
// podman serves images from a folder named by digest (journey.ts), refusing any other image or command.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { installFiles, readFile as readDiskFile } from './disk.js';
import {
  dropConfig,
  type FactoryNode,
  installMcdModel,
  mcdJournal,
  pullSecretJson,
  waitMcdStarted,
} from './mcd-model/install.js';
import { startTimeServer, type TimeServer } from './time-server.js';
import { AGENT_BINARY, AGENT_UNIT, buildNodeImage, INSTALL_LIB, type NodeImage } from './node-image.js';
import { buildNextAgent, INSTALL_UNIT, rebootedInto, REGISTRY_DOWN, renderNaming } from './journey.js';
import { STATE_FILE, unitProps } from './node-checks.js';
import {
  announceSkip,
  endScenario,
  MIN,
  recordTimings,
  skipVm,
  waitAgentSucceeded,
  waitKubeletActive,
} from './scenario.js';
import { newSecret, siteSpec, siteStick } from './sites.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('agent upgrade and rollback scenario');

const PULL_SECRET = pullSecretJson({});

describe.skipIf(skipVm)('upgrading the agent through the MachineConfig, and rolling it back', () => {
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let mcd: FactoryNode | undefined;
  let timeServer: TimeServer | undefined;
  let dir = '';
  let firstStick = '';
  let secondStick = '';
  let versionN = '';
  let imageN = '';
  let versionNext = '';
  let imageNext = '';
  const timings: Record<string, number> = {};

  const version = async (v: Vm) => (await v.sshOk(`${AGENT_BINARY} --version`)).trim();
  const record = async (v: Vm, name: string) => (await v.sshOk(`cat ${INSTALL_LIB}/${name}`)).trim();
  const installJournal = async (v: Vm) => v.sshOk(`journalctl -b 0 -u ${INSTALL_UNIT} -o cat --no-pager; true`);
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-upgrade-'));
    image = await buildNodeImage();
    const next = await buildNextAgent(dir);
    ({ versionN, versionNext, imageNext } = next);
    imageN = (await readDiskFile(image.disk, '/etc/sno-relocate/install.env'))!
      .toString()
      .match(/^SNO_RELOCATE_IMAGE=(.+)$/m)![1]!;
    // only N+1 is in the registry: N comes back from the binary the installer kept, or not at all
    await installFiles(image.disk, next.entries);
    timeServer = await startTimeServer();
    mcd = await installMcdModel(image.disk, image.machineConfigs, PULL_SECRET, 'release-4.18', timeServer);
    firstStick = await siteStick(dir, 'first.img', siteSpec(newSecret()));
    secondStick = await siteStick(dir, 'second.img', siteSpec(newSecret()));
  }, 15 * MIN);

  afterAll(async () => {
    await endScenario(vm, image, dir, { scenario: 'agent-upgrade', timings });
    await timeServer?.stop();
  }, 5 * MIN);

  it('version N, installed as the factory installs it, relocates the node', async () => {
    const started = performance.now();
    vm = await bootVm({ name: 'agent-upgrade', uplinkToHost: true, disk: image!.disk, sticks: [firstStick] });
    await vm.waitSsh();
    await waitKubeletActive(vm);
    await waitAgentSucceeded(vm);
    expect(await version(vm)).toBe(versionN);
    // the installer's boot run found the image of install.env installed, and pulled nothing
    await vm.waitFor(
      `journalctl -b 0 -u ${INSTALL_UNIT} -o cat --no-pager | grep -qF 'the agent of ${imageN} is installed'`,
      (r) => r.code === 0,
      5 * MIN,
    );
    expect(JSON.parse(await vm.sshOk(`cat ${STATE_FILE}`))).toMatchObject({
      result: 'succeeded',
      agentVersion: versionN.split(' ')[1],
    });
    expect(await waitMcdStarted(vm), await mcdJournal(vm)).toMatchObject({ state: 'Done' });
    timings.installAndRelocateMs = Math.round(performance.now() - started);
  });

  it('a MachineConfig naming N+1: the daemon writes it, the installer puts N+1 in place and keeps N', async () => {
    const started = performance.now();
    const v = vm!;
    const update = await renderNaming('rendered-master-agent-next', imageNext, PULL_SECRET);
    await dropConfig(v, update);
    // the technician's second stick is in the node when it comes up again
    await rebootedInto(v, update.metadata.name, [secondStick]);
    expect(await v.sshOk('cat /etc/sno-relocate/install.env')).toContain(`SNO_RELOCATE_IMAGE=${imageNext}`);
    expect(await version(v)).toBe(versionNext);
    expect(await record(v, 'installed-image')).toBe(imageNext);
    expect(await record(v, 'previous-image')).toBe(imageN);
    expect((await v.sshOk(`${INSTALL_LIB}/sno-relocate.previous --version`)).trim()).toBe(versionN);
    // the installed binary is the image's, byte for byte
    expect((await v.sshOk(`sha256sum ${AGENT_BINARY}`)).split(' ')[0]).toBe(imageNext.split('@sha256:')[1]);
    timings.upgradeThroughMachineConfigMs = Math.round(performance.now() - started);
  });

  it('the second stick, in the node at that reboot, is run by N+1, which status names', async () => {
    const started = performance.now();
    const v = vm!;
    // no second reboot: at this boot the agent's unit started once the installer's run had ended
    await v.waitFor(`systemctl is-active ${KUBELET}`, (r) => r.stdout.trim() === 'active', 8 * MIN);
    await waitAgentSucceeded(v);
    expect(v.bootCount).toBe(2);
    const agent = await unitProps(v, AGENT_UNIT, ['ExecMainStartTimestampMonotonic']);
    const installer = await unitProps(v, INSTALL_UNIT, ['ExecMainExitTimestampMonotonic']);
    expect(Number(installer.ExecMainExitTimestampMonotonic)).toBeGreaterThan(0);
    expect(Number(agent.ExecMainStartTimestampMonotonic)).toBeGreaterThan(
      Number(installer.ExecMainExitTimestampMonotonic),
    );
    const state = JSON.parse(await v.sshOk(`cat ${STATE_FILE}`)) as { result: string; agentVersion: string };
    expect(state).toMatchObject({ result: 'succeeded', agentVersion: versionNext.split(' ')[1] });
    const status = await v.sshOk(`${AGENT_BINARY} status`);
    expect(status).toMatch(new RegExp(`^Agent: +${versionNext}$`, 'm'));
    expect(status).not.toContain('Run by:');
    timings.secondStickMs = Math.round(performance.now() - started);
  });

  it('the MachineConfig naming N again rolls back to the kept binary, with the registry unreachable', async () => {
    const started = performance.now();
    const v = vm!;
    await v.sshOk(`touch ${REGISTRY_DOWN}`);
    // the stand-in is the registry's only way in: with it down, a pull fails as at a cut-off site
    const pull = await v.ssh(`podman pull --policy missing ${imageNext.replace(/[0-9a-f]{64}$/, '0'.repeat(64))}`);
    expect([pull.code, pull.stderr]).toEqual([125, expect.stringContaining('network is unreachable')]);
    const rollback = mcd!.render('rendered-master-agent-rollback', PULL_SECRET);
    await dropConfig(v, rollback);
    await rebootedInto(v, rollback.metadata.name, []);
    // the installer's runs of the boot before the daemon's reboot (install.env changed), then this boot's
    const journal = `${await v.sshOk(`journalctl -b -1 -u ${INSTALL_UNIT} -o cat --no-pager; true`)}${await installJournal(v)}`;
    expect(journal).toContain(`installed ${versionN} from the kept previous binary (was ${imageNext})`);
    // no pull was tried since the upgrade: nothing waited for the network, nothing failed for want of the registry
    const upgraded = journal.lastIndexOf(`installed ${versionNext} from ${imageNext}`);
    const sinceUpgrade = upgraded >= 0 ? journal.slice(upgraded) : journal;
    expect(sinceUpgrade).not.toMatch(/pulling|unreachable|manifest unknown/);
    expect(await version(v)).toBe(versionN);
    expect(await record(v, 'installed-image')).toBe(imageN);
    expect(await record(v, 'previous-image')).toBe(imageNext);
    // N reads the state N+1 wrote, and says which agent ran it
    const status = await v.sshOk(`${AGENT_BINARY} status`);
    expect(status).toMatch(new RegExp(`^Agent: +${versionN}$`, 'm'));
    expect(status).toMatch(new RegExp(`^Run by: +${versionNext}$`, 'm'));
    expect(status).toMatch(/^Result: +succeeded/m);
    timings.rollbackMs = Math.round(performance.now() - started);
    await recordTimings('agent-upgrade', timings);
  });
});
