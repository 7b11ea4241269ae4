// The node key sealed to a TPM2 on real nodes. Two machines from the same factory image, each with a
// software TPM2 of its own (swtpm; test/e2e/vm.ts says how such a guest boots): the node, and
// another machine running a copy of the node's disk. The factory's cluster runs on the host (a real
// kube-apiserver), reached from the guests through their kubeconfig.
//
// 1. At the factory, `factory prepare` on each machine seals a new node key to that machine's TPM2.
// 2. The site's stick, its secrets sealed to the node's key and signed for the node, relocates it:
//    the secrets opened in memory, none of them in clear on the stick.
// 3. The same stick on the other machine (the same disk, another TPM2): refused (exit 3), naming
//    the node it is sealed for, nothing changed.
// 4. The node's credential file moved to the other machine does not open there, and the stick is
//    refused again, saying so.
//
// Both guests boot together, once, for the whole story.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_KUBECONFIG } from '../../src/cli/runtime.js';
import { NODE_KEY_CREDENTIAL, NODE_KEY_RECORD } from '../../src/trust/node-key.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { INSTALL_ADDRESS, seedRelocatable } from '../factory/env.js';
import { installFiles, readFile as readDiskFile } from './disk.js';
import { guestApiForward, guestKubeconfig } from './guest-api.js';
import { expectRefusedUnchanged, waitRun } from './journey.js';
import { AGENT_BINARY, AGENT_UNIT, buildNodeImage, ensureAgentBuild, type NodeImage } from './node-image.js';
import { events, waitEvent } from './node-checks.js';
import { announceSkip, endVm, expectSiteNetwork, MIN, recordTimings, skipVm } from './scenario.js';
import { newSecret, SITE_HOSTNAME, siteSpec, signedSiteStick, type SiteSecret } from './sites.js';
import { tpm2StackFiles } from './tpm2-stack.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('node key sealed to a TPM2');

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const TRUST_ANCHOR = '/etc/sno-relocate/trust/factory.pub';
/** the node key opened by hand: the credential's name is the one systemd-creds bound into it (src/trust/node-key.ts) */
const DECRYPT = `decrypt --name=sno-relocate-node-key ${NODE_KEY_CREDENTIAL} -`;
/** systemd-creds told of a host key that does not exist */
const NO_HOST_KEY = 'SYSTEMD_CREDENTIAL_SECRET=/nonexistent';

describe.skipIf(skipVm || kubeSkipped)('the node key sealed to a TPM2: a lost stick opens on no other machine', () => {
  let env: ClusterEnv | undefined;
  let image: NodeImage | undefined;
  /** the node, and another machine running a copy of its disk */
  const vms: { node?: Vm; other?: Vm } = {};
  let dir = '';
  let machineId = '';
  let secret: SiteSecret | undefined;
  let stick = '';
  const recipients: Record<string, string> = {};
  const timings: Record<string, number> = {};
  const started = performance.now();

  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    await seedRelocatable(env.cluster.kubeConfig());
    image = await buildNodeImage();
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-sealed-tpm-'));
    const agent = await ensureAgentBuild();
    await promisify(execFile)(agent, ['keygen', '--out', join(dir, 'factory')]);
    await installFiles(image.disk, [
      { path: TRUST_ANCHOR, mode: 0o644, contents: await readFile(join(dir, 'factory.pub')) },
      { path: NODE_KUBECONFIG, mode: 0o600, contents: guestKubeconfig(env) },
      ...(await tpm2StackFiles()),
    ]);
    machineId = (await readDiskFile(image.disk, '/etc/machine-id'))!.toString().trim();
    const boot = async (name: string) => {
      const v = await bootVm({ name, disk: image!.disk, tpm: true, hostForwards: [guestApiForward(env!)] });
      await v.waitSsh();
      return v;
    };
    [vms.node, vms.other] = await Promise.all([boot('sealed-tpm-node'), boot('sealed-tpm-other')]);
    timings.bootMs = Math.round(performance.now() - started);
  }, 15 * MIN);

  afterAll(async () => {
    timings.wallMs = Math.round(performance.now() - started);
    await endVm(vms.node);
    await endVm(vms.other);
    await image?.dispose();
    await env?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    await recordTimings('sealed-tpm', timings);
  }, 5 * MIN);

  it("at the factory, prepare seals each machine's new node key to its own TPM2", async () => {
    const t = performance.now();
    const prepare = async (v: Vm) => {
      // the kernel's TPM2, which systemd-creds seals to (a BIOS measures nothing, so support is partial)
      expect(await v.sshOk('ls /dev/tpm0 /dev/tpmrm0')).toBe('/dev/tpm0\n/dev/tpmrm0\n');
      // the TPM2 libraries laid into the image, known to the loader as a package's install makes them
      await v.sshOk('ldconfig');
      expect((await v.ssh('systemd-creds has-tpm2')).stdout).toMatch(/^\+driver$/m);
      // the factory has run far longer than the agent waits for a stick at boot
      await waitEvent(v, 'configWaiting', { timeoutMs: 5 * MIN });
      await v.sshOk(`systemctl stop ${AGENT_UNIT}`);
      // br-ex as ovs-configuration left it at installation: the install address first
      await v.sshOk(
        `ip link add br-ex type bridge && ip addr add ${INSTALL_ADDRESS} dev br-ex && ip link set br-ex up`,
      );
      const r = await v.ssh(`${AGENT_BINARY} factory prepare --require-tpm`, { timeoutMs: 5 * MIN });
      expect(r.code, r.stderr).toBe(0);
      const recipient = /^node key (age1\S+) \(sealed to the node's TPM2\)/m.exec(r.stdout)?.[1];
      expect(recipient, r.stdout).toBeDefined();
      expect(JSON.parse(await v.sshOk(`cat ${NODE_KEY_RECORD}`))).toMatchObject({ recipient, sealing: 'tpm2' });
      // sealed to the TPM2 alone: the credential opens here without any host key
      expect((await v.ssh(`${NO_HOST_KEY} systemd-creds ${DECRYPT} >/dev/null`)).code).toBe(0);
      await v.sshOk('ip link del br-ex');
      recipients[v.name] = recipient!;
    };
    // one after the other, as they come off the line (both run against the one factory cluster here)
    await prepare(vms.node!);
    await prepare(vms.other!);
    // two TPM2s, two keys
    expect(recipients[vms.node!.name]).not.toBe(recipients[vms.other!.name]);
    timings.prepareMs = Math.round(performance.now() - t);
  });

  it("the site's stick, sealed to the node's key, relocates the node; none of its secrets in clear on it", async () => {
    const v = vms.node!;
    secret = newSecret();
    stick = await signedSiteStick(
      dir,
      'site.img',
      siteSpec(secret),
      await ensureAgentBuild(),
      join(dir, 'factory.key'),
      undefined,
      ['--bind-machine-id', machineId, '--node-key', recipients[v.name]!],
    );
    const bytes = await readFile(stick);
    for (const needle of secret.needles) expect(bytes.includes(needle)).toBe(false);
    const t = performance.now();
    const runs = (await events(v, 'runFinished')).length;
    await v.plugStick(stick);
    await waitRun(v, runs + 1);
    timings.relocatedMs = Math.round(performance.now() - t);
    // the technician takes the stick on to the next machine
    await v.unplugStick();
    await expectSiteNetwork(v);
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${SITE_HOSTNAME}\n`);
    const status = await v.sshOk(`${AGENT_BINARY} status`);
    expect(status).toContain(`Node key: ${recipients[v.name]} (sealed to the node's TPM2)`);
    expect(status).toMatch(/^Secrets: {2}site \S+: sealed for this node, opened in memory \(.*pullSecret.*\)$/m);
  });

  it('the same stick on another machine with a copy of the disk: refused, naming the node, nothing changed', async () => {
    const v = vms.other!;
    const journal = await expectRefusedUnchanged(v, stick);
    expect(journal).toMatch(
      new RegExp(
        `site-config refused: \\S+: sealed for node ${machineId}, not for this node \\(${machineId}\\); nothing on the host was changed`,
      ),
    );
  });

  it("the node's credential file moved to the other machine does not open there", async () => {
    const node = vms.node!;
    const other = vms.other!;
    const credential = await node.sshOk(`base64 -w0 ${NODE_KEY_CREDENTIAL}`);
    // it still opens where it was made
    expect((await node.ssh(`systemd-creds ${DECRYPT} >/dev/null`)).code).toBe(0);
    await other.sshOk(`base64 -d >${NODE_KEY_CREDENTIAL}`, { input: credential });
    const opened = await other.ssh(`systemd-creds ${DECRYPT}`);
    expect(opened.code).not.toBe(0);
    expect(opened.stdout).toBe('');
    // the stick plugged in again: this boot's second refusal, before any step
    const hostname = await other.sshOk('hostnamectl hostname');
    await other.plugStick(stick);
    const journal = await other.waitFor(
      `journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager`,
      (r) => r.stdout.split('Main process exited, code=exited, status=3/').length > 2,
      5 * MIN,
    );
    expect(journal.stdout).toMatch(
      new RegExp(
        `site-config refused: the node key ${NODE_KEY_CREDENTIAL} does not open on this machine \\(systemd-creds: .+\\); nothing on the host was changed`,
      ),
    );
    expect(await events(other, 'stepStarted')).toEqual([]);
    expect(await other.sshOk('hostnamectl hostname')).toBe(hostname);
    await other.unplugStick();
  });
});
