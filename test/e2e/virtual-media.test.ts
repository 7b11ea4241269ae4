// The image-based install's config ISO through a BMC's virtual media: the node boots with an empty
// virtual CD drive (an IDE CD-ROM, sr0, present from boot), its boot-time wait for a stick is over,
// and the ISO is then inserted through QEMU's monitor (blockdev-change-medium), as a BMC attaches
// it. The kernel reports a `change` of sr0 with DISK_MEDIA_CHANGE=1, not an `add`; the udev rule
// must start the agent on it, and the node relocates to the site the installer's media describes
// (manifest.json from the installer-media generator: cluster_id, infra_id, release_registry and
// KubeconfigCryptoRetention all filled, as the installer writes them).
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeInstallerMedia } from '../ibi/installer-media.js';
import { AGENT_UNIT, buildNodeImage, type NodeImage } from './node-image.js';
import { events } from './node-checks.js';
import { announceSkip, endScenario, MIN, skipVm, waitAgentSucceeded, waitKubeletActive } from './scenario.js';
import { newSecret, SITE_ADDRESS, SITE_SSH_KEY, siteNmstate, STICK_LABEL } from './sites.js';
import { makeStick } from './stick.js';
import { bootVm, type Vm } from './vm.js';
import { KEYS_FILE } from '../../src/steps/ssh-keys.js';

announceSkip('virtual media scenario');

const HOSTNAME = 'sno-ibi-bmc12';
const CD = 'vcd0';
const BY_LABEL = `/dev/disk/by-label/${STICK_LABEL}`;

describe.skipIf(skipVm)('config ISO inserted into a virtual CD drive after boot', () => {
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let dir = '';
  let iso = '';
  const timings: Record<string, number> = {};

  beforeAll(async () => {
    const started = performance.now();
    image = await buildNodeImage();
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-vmedia-'));
    const media = writeInstallerMedia(dir, {
      clusterName: 'sno',
      baseDomain: 'bmc12.example.com',
      hostname: HOSTNAME,
      pullSecret: { auths: { 'registry.bmc12.example.com:5000': { auth: newSecret().auth } } },
      sshKey: SITE_SSH_KEY,
      machineNetwork: '192.0.2.0/24',
      releaseRegistry: 'quay.io',
      networkConfig: siteNmstate(),
      kubeadminPasswordHash: '$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy',
    });
    iso = await makeStick({
      dir,
      label: STICK_LABEL,
      fs: 'iso9660',
      fileName: 'imagebasedconfig.iso',
      files: [
        {
          name: 'cluster-configuration/manifest.json',
          contents: await readFile(join(media.mediaDir, 'cluster-configuration/manifest.json')),
        },
      ],
    });
    // an IDE CD-ROM with no medium: the drive a BMC's virtual media presents from power-on
    vm = await bootVm({
      name: 'virtual-media',
      disk: image.disk,
      qemuArgs: ['-device', `ide-cd,bus=ide.1,unit=0,id=${CD}`],
    });
    await vm.waitSsh();
    timings.bootMs = Math.round(performance.now() - started);
  }, 15 * MIN);

  afterAll(() => endScenario(vm, image, dir, { scenario: 'virtual-media', timings }), 5 * MIN);

  it('starts the agent when the ISO is inserted after its boot wait, and the node relocates', async () => {
    const v = vm!;
    // the drive is there, empty: no label, nothing to find
    expect(await v.sshOk('lsblk -dn -o NAME,TYPE /dev/sr0')).toMatch(/^sr0\s+rom$/m);
    expect((await v.ssh(`test -e ${BY_LABEL}`)).code).not.toBe(0);
    // the boot run waits for a stick; its wait ends (as after its 15 minutes): from now on only udev
    // starts a run. Stopped only once it waits: a stop while systemd still starts it fails the unit
    await v.waitFor(
      `journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager | grep -q 'for a site-config'`,
      (r) => r.code === 0,
      3 * MIN,
    );
    await v.sshOk(`systemctl stop ${AGENT_UNIT}`);
    // a run stopped in its wait ends cleanly, saying so: inactive, not failed
    expect((await v.ssh(`systemctl is-active ${AGENT_UNIT}`)).stdout.trim()).toBe('inactive');
    expect(await v.sshOk(`journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager`)).toContain(
      'stopped while waiting for a site-config (SIGTERM)',
    );
    expect((await v.ssh('systemctl is-active kubelet.service')).stdout.trim()).not.toBe('active');

    const started = performance.now();
    await v.qmp!.execute('blockdev-change-medium', {
      id: CD,
      filename: iso,
      format: 'raw',
      'read-only-mode': 'read-only',
    });
    await v.waitFor(`readlink -f ${BY_LABEL}`, (r) => r.stdout === '/dev/sr0\n', 3 * MIN);
    await waitKubeletActive(v);
    await waitAgentSucceeded(v);
    timings.insertToRelocatedMs = Math.round(performance.now() - started);

    // the agent was started by the medium's change event, and found the ISO on the CD drive
    const [found] = await events(v, 'configFound');
    expect(found!.MESSAGE).toContain(`site-config found at /run/sno-relocate/${STICK_LABEL}`);
    expect((await v.sshOk('hostnamectl hostname')).trim()).toBe(HOSTNAME);
    const brEx = JSON.parse(await v.sshOk('ip -j -4 addr show dev br-ex')) as { addr_info: { local: string }[] }[];
    expect(brEx[0]!.addr_info.map((a) => a.local)).toContain(SITE_ADDRESS);
    expect((await v.sshOk(`cat ${KEYS_FILE}`)).split('\n')).toContain(SITE_SSH_KEY);
    // read and let go: the ISO is no longer mounted
    expect((await v.ssh(`findmnt -n ${BY_LABEL}`)).code).not.toBe(0);
  });
});
