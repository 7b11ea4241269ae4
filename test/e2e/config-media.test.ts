// Config media as sites bring them, found by the agent on a real node (udev, the agent's unit,
// its own read-only mount). The image-based install's config ISO (made with xorriso: ISO 9660 with
// Rock Ridge, volume label cluster-config, cluster-configuration/manifest.json as the installer
// writes it), written raw to a stick, so the filesystem fills the whole device and there is no
// partition table: the node boots with it and is relocated to the site the manifest describes.
// Then a stick a person partitioned and formatted, the label on its first partition, is plugged in
// while the node runs and relocates it to its own site.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildNodeImage, type NodeImage } from './node-image.js';
import { events, MessageId } from './node-checks.js';
import { announceSkip, endScenario, MIN, skipVm, waitAgentSucceeded, waitKubeletActive } from './scenario.js';
import {
  GATEWAY,
  newSecret,
  SITE_ADDRESS,
  SITE_SSH_KEY,
  siteConfigYaml,
  siteNmstate,
  siteSpec,
  STICK_LABEL,
} from './sites.js';
import { makeStick } from './stick.js';
import { bootVm, type Vm } from './vm.js';
import { KEYS_FILE } from '../../src/steps/ssh-keys.js';

announceSkip('config media scenarios');

const ISO_HOSTNAME = 'sno-ibi-store9';
const PARTITION_HOSTNAME = 'sno-vm-partitioned';
const BY_LABEL = `/dev/disk/by-label/${STICK_LABEL}`;

/** manifest.json as the image-based install writes it (Go's encoder: empty structs and all) */
function manifest(pullAuth: string): string {
  const nmstate = siteNmstate();
  return JSON.stringify({
    api_version: 1,
    base_domain: 'store9.example.com',
    cluster_name: 'sno',
    hostname: ISO_HOSTNAME,
    KubeconfigCryptoRetention: { KubeAPICrypto: { ServingCrypto: {}, ClientAuthCrypto: {} }, IngresssCrypto: {} },
    ssh_key: SITE_SSH_KEY,
    raw_nm_state_config: yaml.dump(nmstate),
    pull_secret: JSON.stringify({ auths: { 'registry.store9.example.com:5000': { auth: pullAuth } } }),
    additionalTrustBundle: { userCaBundle: '', proxyConfigmapName: '', proxyConfigmapBundle: '' },
  });
}

interface BlockDevice {
  name: string;
  label: string | null;
  fstype: string | null;
  pttype: string | null;
  children?: BlockDevice[];
}

describe.skipIf(skipVm)('config media found on a real node', () => {
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let dir = '';
  let partitioned = '';
  const timings: Record<string, number> = {};

  /** the USB disks' block devices as lsblk shows them */
  const usbDisks = async (): Promise<BlockDevice[]> =>
    (
      JSON.parse(await vm!.sshOk('lsblk -J -I 8 -o NAME,LABEL,FSTYPE,PTTYPE')) as {
        blockdevices: BlockDevice[];
      }
    ).blockdevices;
  const runsFinished = async () => (await events(vm!, 'runFinished')).length;

  beforeAll(async () => {
    const started = performance.now();
    image = await buildNodeImage();
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-media-'));
    const iso = await makeStick({
      dir,
      label: STICK_LABEL,
      fs: 'iso9660',
      fileName: 'imagebasedconfig.iso',
      files: [{ name: 'cluster-configuration/manifest.json', contents: manifest(newSecret().auth) }],
    });
    partitioned = await makeStick({
      dir,
      label: STICK_LABEL,
      fs: 'ext4',
      partitioned: true,
      fileName: 'partitioned.img',
      files: [
        {
          name: 'site-config.yaml',
          contents: siteConfigYaml({ ...siteSpec(newSecret()), hostname: PARTITION_HOSTNAME }),
        },
      ],
    });
    vm = await bootVm({ name: 'config-media', disk: image.disk, sticks: [iso] });
    await vm.waitSsh();
    timings.bootMs = Math.round(performance.now() - started);
  }, 15 * MIN);

  afterAll(() => endScenario(vm, image, dir, { scenario: 'config-media', timings }), 5 * MIN);

  it("relocates the node with an image-based install's config ISO written raw to a stick", async () => {
    const v = vm!;
    const started = performance.now();
    await waitKubeletActive(v);
    await waitAgentSucceeded(v);
    timings.isoRunMs = Math.round(performance.now() - started);
    // the label is on the whole device: no partition table, no partitions
    expect(await v.sshOk(`readlink -f ${BY_LABEL}`)).toMatch(/^\/dev\/sd[a-z]\n$/);
    const disks = await usbDisks();
    expect(disks).toEqual([expect.objectContaining({ label: STICK_LABEL, fstype: 'iso9660', pttype: null })]);
    expect(disks[0]!.children).toBeUndefined();
    const [found] = await events(v, 'configFound');
    expect(found!.MESSAGE).toContain(`site-config found at /run/sno-relocate/${STICK_LABEL}`);
    // the site the manifest describes: its hostname, its network (raw_nm_state_config), kubelet let through
    expect((await v.sshOk('hostnamectl hostname')).trim()).toBe(ISO_HOSTNAME);
    const brEx = JSON.parse(await v.sshOk('ip -j -4 addr show dev br-ex')) as { addr_info: { local: string }[] }[];
    expect(brEx[0]!.addr_info.map((a) => a.local)).toContain(SITE_ADDRESS);
    expect(await v.sshOk('ip -j link show ens4')).toContain('"master":"br-ex"');
    expect(await v.sshOk('ip -4 route show default')).toMatch(/^default via 192\.0\.2\.1 dev br-ex/m);
    expect((await v.ssh(`ping -c 1 -W 5 ${GATEWAY}`)).code).toBe(0);
    expect((await v.sshOk(`cat ${KEYS_FILE}`)).split('\n')).toContain(SITE_SSH_KEY);
    // the agent unmounted the ISO once it had read it
    expect((await v.ssh(`findmnt -n ${BY_LABEL}`)).code).not.toBe(0);
  });

  it('relocates the node again with a partitioned stick plugged in while it runs, the label on its partition', async () => {
    const v = vm!;
    const before = await runsFinished();
    await v.unplugStick();
    await v.waitFor(`test -e ${BY_LABEL}`, (r) => r.code !== 0, 3 * MIN);
    const started = performance.now();
    await v.plugStick(partitioned);
    await v.waitFor(`readlink -f ${BY_LABEL}`, (r) => /^\/dev\/sd[a-z]1\n$/.test(r.stdout), 3 * MIN);
    // a partition table on the device, the label on its first partition only
    const [disk] = await usbDisks();
    expect(disk).toMatchObject({ label: null, fstype: null, pttype: 'dos' });
    expect(disk!.children).toEqual([expect.objectContaining({ label: STICK_LABEL, fstype: 'ext4' })]);
    await v.waitFor(
      `journalctl -b 0 -q -o cat --no-pager MESSAGE_ID=${MessageId.runFinished} | wc -l`,
      (r) => Number(r.stdout.trim()) > before,
      8 * MIN,
    );
    await waitAgentSucceeded(v);
    timings.partitionRunMs = Math.round(performance.now() - started);
    expect((await v.sshOk('hostnamectl hostname')).trim()).toBe(PARTITION_HOSTNAME);
    expect((await v.ssh('systemctl is-active kubelet.service')).stdout.trim()).toBe('active');
  });
});
