// The node keeps its Kubernetes name on a real node: the VM's stand-in kubelet decides its node
// name as kubelet does under OpenShift's unit (EnvironmentFile=-/etc/kubernetes/kubelet-env,
// --hostname-override=${KUBELET_NODE_NAME}: machine-config-operator release-4.14..4.18
// templates/master/01-master-kubelet/_base/units/kubelet.service.yaml; kubelet takes the override
// when it is not empty, else the kernel's hostname lowercased). The stick gives the site hostname:
// the OS hostname changes, kubelet registers under the factory name, and the machine-config
// daemon's model (test/e2e/mcd-model), whose rendered config carries this kubelet unit, finds no
// drift; after a reboot without the stick, the same.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installFiles } from './disk.js';
import { buildNodeImage, type NodeImage } from './node-image.js';
import { announceSkip, endScenario, KUBELET, MIN, skipVm, waitAgentSucceeded, waitKubeletActive } from './scenario.js';
import { newSecret, SITE_HOSTNAME, siteSpec, siteStick } from './sites.js';
import { installMcdModel, mcdJournal, pullSecretJson, waitMcdStarted } from './mcd-model/install.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('node name scenarios');

/** the base image's static hostname (build-base.sh), the name the node was installed under */
const FACTORY_HOSTNAME = 'sno-factory';
const REGISTERED = '/run/kubelet-standin/node-name';
const STANDIN = '/usr/local/bin/kubelet-standin';
const KUBELET_UNIT = `[Unit]
Description=Kubernetes Kubelet (test stand-in: names its node as kubelet does)

[Service]
Type=simple
EnvironmentFile=-/etc/kubernetes/kubelet-env
ExecStart=${STANDIN} --hostname-override=\${KUBELET_NODE_NAME}

[Install]
WantedBy=multi-user.target
`;
// k8s.io/component-helpers node/util GetHostname: the override when not empty, else os.Hostname(),
// trimmed and lowercased; the stand-in "registers" by writing the name where the test reads it
const KUBELET_STANDIN = `#!/bin/sh
name="\${1#--hostname-override=}"
[ -n "$name" ] || name="$(cat /proc/sys/kernel/hostname)"
mkdir -p ${posix.dirname(REGISTERED)}
printf '%s\\n' "$name" | tr 'A-Z' 'a-z' > ${REGISTERED}
exec sleep infinity
`;

describe.skipIf(skipVm)('the node name on a real node', () => {
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let stickDir = '';
  let stick = '';

  beforeAll(async () => {
    image = await buildNodeImage();
    await installFiles(image.disk, [
      { path: '/etc/systemd/system/kubelet.service', mode: 0o644, contents: KUBELET_UNIT },
      { path: STANDIN, mode: 0o755, contents: KUBELET_STANDIN },
    ]);
    // after the kubelet unit: the daemon's rendered config declares the unit as the node has it
    await installMcdModel(image.disk, image.machineConfigs, pullSecretJson({}), 'release-4.18');
    stickDir = await mkdtemp(join(tmpdir(), 'sno-e2e-node-name-'));
    stick = await siteStick(stickDir, 'site.img', siteSpec(newSecret()));
  }, 15 * MIN);

  afterAll(() => endScenario(vm, image, stickDir), 5 * MIN);

  const expectKeptName = async (v: Vm) => {
    expect(await v.sshOk('cat /etc/hostname')).toBe(`${SITE_HOSTNAME}\n`);
    expect(await v.sshOk('hostname')).toBe(`${SITE_HOSTNAME}\n`);
    expect(await v.sshOk('cat /etc/kubernetes/kubelet-env')).toBe(`KUBELET_NODE_NAME=${FACTORY_HOSTNAME}\n`);
    expect(await v.sshOk(`cat ${REGISTERED}`)).toBe(`${FACTORY_HOSTNAME}\n`);
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({
      state: 'Done',
      currentConfig: 'rendered-master-factory',
    });
  };

  it('changes the OS hostname; kubelet registers under the factory name, with no drift', async () => {
    vm = await bootVm({ name: 'node-name-kept', disk: image!.disk, sticks: [stick] });
    await vm.waitSsh();
    await waitKubeletActive(vm);
    await waitAgentSucceeded(vm);
    await expectKeptName(vm);
  });

  it('after a reboot without the stick: the same name, the same hostname', async () => {
    const v = vm!;
    await v.ssh('systemctl reboot');
    await v.waitGuestStopped(5 * MIN);
    await v.bootAgain({ sticks: [] });
    await v.waitSsh();
    await v.waitFor(`systemctl is-active ${KUBELET}`, (r) => r.stdout.trim() === 'active', 5 * MIN);
    await expectKeptName(v);
  });
});
