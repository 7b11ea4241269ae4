// A wrong stick, as a technician at a store lives it. The node comes from the factory trusting the
// factory's signing key; the factory's cluster runs on the host (a real kube-apiserver with the
// models of OpenShift's operators), reached from the node through its kubeconfig, and the agent's
// run goes on past the node steps to the domain step, which issues the site's certificates.
//
// 1. The office sends a stick made for another node (signed for that node's machine-id, with
//    another store's hostname and domain). Plugged in, it is refused before anything changes.
// 2. The stick for this node arrives, but with a typo in the domain: the node moves, and answers
//    under the misspelt names.
// 3. The corrected stick: the node answers under the right domain, and nothing of the misspelt
//    domain or of the other node is left, on the node or in the cluster.
//
// One boot for the whole story.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_KUBECONFIG } from '../../src/cli/runtime.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { installFiles, readFile as readDiskFile } from './disk.js';
import { guestApiForward, guestKubeconfig } from './guest-api.js';
import { domainView, expectRefusedUnchanged, moveTo, waitRun } from './journey.js';
import { buildNodeImage, ensureAgentBuild, nodeOnlyDropIn, type NodeImage } from './node-image.js';
import { events, shq, waitEvent } from './node-checks.js';
import { announceSkip, endScenario, expectNodeHeld, expectSiteNetwork, MIN, skipVm } from './scenario.js';
import { newSecret, SITE_HOSTNAME, siteSpec, signedSiteStick } from './sites.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('journey: a wrong stick');

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const TRUST_ANCHOR = '/etc/sno-relocate/trust/factory.pub';
const RIGHT_DOMAIN = 'vm-store-0007.example.com';
const TYPO_DOMAIN = 'vm-store-0007.exmaple.com';
const OTHER_DOMAIN = 'vm-store-0008.example.com';
const OTHER_HOSTNAME = 'sno-vm-store8';
/** where on the node a site's names could linger: configuration, kubelet, the users' homes */
const NODE_PLACES = ['/etc', '/var/lib/kubelet', '/home/core', '/root'];

describe.skipIf(skipVm || kubeSkipped)('journey: a wrong stick, then the right one', () => {
  let env: ClusterEnv | undefined;
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let dir = '';
  let machineId = '';
  const sticks = { otherNode: '', typo: '', corrected: '' };
  const timings: Record<string, number> = {};
  const started = performance.now();

  /** files under NODE_PLACES that name `text` */
  const nodeFilesNaming = async (v: Vm, text: string) =>
    (await v.ssh(`grep -rlsF -- ${shq(text)} ${NODE_PLACES.join(' ')}`)).stdout.split('\n').filter(Boolean);

  beforeAll(async () => {
    env = await startFactory();
    image = await buildNodeImage();
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-wrong-stick-'));
    const agent = await ensureAgentBuild();
    const key = join(dir, 'factory.key');
    await promisify(execFile)(agent, ['keygen', '--out', join(dir, 'factory')]);
    await installFiles(image.disk, [
      { path: TRUST_ANCHOR, mode: 0o644, contents: await readFile(join(dir, 'factory.pub')) },
      { path: NODE_KUBECONFIG, mode: 0o600, contents: guestKubeconfig(env) },
      nodeOnlyDropIn(image.payload, 'node,domain'),
    ]);
    machineId = (await readDiskFile(image.disk, '/etc/machine-id'))!.toString().trim();
    const forNode = (id: string) => ['--bind-machine-id', id];
    const site = (baseDomain: string) => ({ ...siteSpec(newSecret()), baseDomain });
    sticks.otherNode = await signedSiteStick(
      dir,
      'other-node.img',
      { ...site(OTHER_DOMAIN), hostname: OTHER_HOSTNAME },
      agent,
      key,
      undefined,
      forNode(randomBytes(16).toString('hex')),
    );
    sticks.typo = await signedSiteStick(dir, 'typo.img', site(TYPO_DOMAIN), agent, key, undefined, forNode(machineId));
    sticks.corrected = await signedSiteStick(
      dir,
      'corrected.img',
      site(RIGHT_DOMAIN),
      agent,
      key,
      undefined,
      forNode(machineId),
    );
    vm = await bootVm({ name: 'journey-wrong-stick', disk: image.disk, hostForwards: [guestApiForward(env)] });
    await vm.waitSsh();
    // the node is up and waits for a stick
    await waitEvent(vm, 'configWaiting', { timeoutMs: 5 * MIN });
    timings.bootMs = Math.round(performance.now() - started);
  }, 15 * MIN);

  afterAll(async () => {
    timings.wallMs = Math.round(performance.now() - started);
    await endScenario(vm, image, dir, { scenario: 'journey-wrong-stick', timings });
    await env?.stop();
  }, 5 * MIN);

  it('a stick made for another node: refused before any change, the node as it was', async () => {
    const v = vm!;
    const t = performance.now();
    const hostname = await v.sshOk('hostnamectl hostname');
    await expectRefusedUnchanged(v, sticks.otherNode);
    const [untrusted] = await events(v, 'configUntrusted');
    expect(untrusted?.MESSAGE).toMatch(
      new RegExp(
        `made for another node \\(machine-id [0-9a-f]{32}, this node is ${machineId}\\).*nothing on the host was changed`,
      ),
    );
    await expectNodeHeld(v, hostname);
    expect(await nodeFilesNaming(v, OTHER_DOMAIN)).toEqual([]);
    timings.otherNodeRefusedMs = Math.round(performance.now() - t);
  });

  it("this node's stick with a typo in the domain: the node moves and answers under the misspelt names", async () => {
    const v = vm!;
    const t = performance.now();
    const runs = (await events(v, 'runFinished')).length;
    await v.plugStick(sticks.typo);
    await waitRun(v, runs + 1);
    timings.typoRelocatedMs = Math.round(performance.now() - t);
    await expectSiteNetwork(v);
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${SITE_HOSTNAME}\n`);
    const view = await domainView(env!);
    // the console's, downloads', OAuth's, the API's and the router's, each naming the misspelt domain
    expect(Object.keys(view.certificates)).toHaveLength(5);
    for (const names of Object.values(view.certificates)) expect(names.join(' ')).toContain(TYPO_DOMAIN);
    expect(view.configs).toContain(`apps.sno.${TYPO_DOMAIN}`);
  });

  it('the corrected stick: the right domain, nothing of the misspelt one or of the other node left', async () => {
    const v = vm!;
    const t = performance.now();
    await moveTo(v, sticks.corrected);
    timings.correctedMs = Math.round(performance.now() - t);
    await expectSiteNetwork(v);
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${SITE_HOSTNAME}\n`);
    const view = await domainView(env!);
    expect(Object.keys(view.certificates)).toHaveLength(5);
    for (const [secret, names] of Object.entries(view.certificates)) {
      expect([secret, names.some((n) => n.endsWith(`.sno.${RIGHT_DOMAIN}`))]).toEqual([secret, true]);
      expect([secret, names.filter((n) => n.includes(TYPO_DOMAIN) || n.includes(OTHER_DOMAIN))]).toEqual([secret, []]);
    }
    expect(view.configs).toContain(`apps.sno.${RIGHT_DOMAIN}`);
    expect(view.configs).not.toContain(TYPO_DOMAIN);
    expect(view.configs).not.toContain(OTHER_DOMAIN);
    for (const gone of [TYPO_DOMAIN, OTHER_DOMAIN, OTHER_HOSTNAME]) {
      expect([gone, await nodeFilesNaming(v, gone)]).toEqual([gone, []]);
    }
  });
});
