// Smoke test of the VM harness itself: the base image boots with a stick, the node services the
// agent relies on are up, a hot-plugged stick shows up by label, and a power cut is survived.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeStick } from './stick.js';
import { bootVm, type Vm } from './vm.js';

const MIN = 60_000;
const skip = process.env.VM_E2E === '0';
if (skip) console.log('VM end-to-end smoke test skipped: VM_E2E=0');

const round = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

describe.skipIf(skip)('VM harness smoke', () => {
  let vm: Vm | undefined;
  let relocationStick = '';
  let stickDir = '';

  beforeAll(async () => {
    stickDir = await mkdtemp(join(tmpdir(), 'sno-smoke-'));
    const clusterStick = await makeStick({
      dir: stickDir,
      label: 'cluster-config',
      files: [{ name: 'site-config.yaml', contents: 'apiVersion: sno-relocate/v1\nkind: SiteConfig\n' }],
    });
    relocationStick = await makeStick({
      dir: stickDir,
      label: 'relocation-config',
      files: [{ name: 'site-config.yaml', contents: 'kind: SiteConfig\n' }],
    });
    vm = await bootVm({ name: 'smoke', sticks: [clusterStick] });
  }, 10 * MIN);

  afterAll(async () => {
    if (vm) {
      await vm.collectArtifacts().catch((e: Error) => console.log(`artifacts: ${e.message}`));
      await vm.dispose();
    }
    if (stickDir) await rm(stickDir, { recursive: true, force: true });
  }, 5 * MIN);

  it(
    'boots to ssh with the node services up and the stick visible by label',
    async () => {
      const v = vm!;
      const ms = await v.waitSsh();
      console.log(`boot to ssh: ${round(ms)}`);
      await v.waitFor('systemctl is-active multi-user.target', (r) => r.stdout.trim() === 'active', 5 * MIN);
      expect((await v.ssh('systemctl is-active NetworkManager.service')).stdout.trim()).toBe('active');
      expect(await v.sshOk('readlink -f /dev/disk/by-label/cluster-config')).toMatch(/^\/dev\/sd[a-z]\n$/);
      expect(await v.sshOk('udevadm info --query=property /dev/disk/by-label/cluster-config')).toContain('ID_BUS=usb');
      const content = await v.sshOk(
        'mount -o ro /dev/disk/by-label/cluster-config /mnt && cat /mnt/site-config.yaml; umount /mnt',
      );
      expect(content).toContain('kind: SiteConfig');
      expect(
        await v.sshOk(
          'busctl get-property org.freedesktop.hostname1 /org/freedesktop/hostname1 org.freedesktop.hostname1 Hostname',
        ),
      ).toBe('s "sno-factory"\n');
      const kubelet = await v.ssh('systemctl is-active kubelet.service');
      expect(kubelet.stdout.trim()).toBe('inactive');
      expect((await v.ssh('nmcli -t -f DEVICE,STATE,CONNECTION device')).stdout).toContain('ens4:connected:uplink');
    },
    10 * MIN,
  );

  it(
    'sees a hot-plugged stick appear and disappear by label',
    async () => {
      const v = vm!;
      const t0 = performance.now();
      const id = await v.plugStick(relocationStick);
      await v.waitFor('test -b /dev/disk/by-label/relocation-config', (r) => r.code === 0, 3 * MIN);
      console.log(`hot-plug to by-label link: ${round(performance.now() - t0)}`);
      expect(await v.sshOk('udevadm info --query=property /dev/disk/by-label/relocation-config')).toContain(
        'ID_USB_DRIVER=usb-storage',
      );
      await v.unplugStick(id);
      await v.waitFor('test -e /dev/disk/by-label/relocation-config', (r) => r.code === 1, 3 * MIN);
    },
    10 * MIN,
  );

  it(
    'comes back after a power cut',
    async () => {
      const v = vm!;
      await v.sshOk('echo before-cut > /root/marker && sync');
      await v.powerCut();
      expect(v.running).toBe(false);
      await v.bootAgain();
      const ms = await v.waitSsh();
      console.log(`power cut, boot again to ssh: ${round(ms)}`);
      expect(await v.sshOk('cat /root/marker')).toBe('before-cut\n');
      await v.waitFor('test -b /dev/disk/by-label/cluster-config', (r) => r.code === 0, 3 * MIN);
      const boots = await v.sshOk('journalctl --list-boots --no-pager | tail -n +2 | wc -l');
      expect(Number(boots.trim())).toBeGreaterThanOrEqual(2);
      await v.waitSerial(/Reached target.*Multi-User System/, 5 * MIN);
    },
    15 * MIN,
  );
});
