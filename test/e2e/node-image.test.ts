// How MachineConfig content becomes image entries, without a VM: the Ignition fields the node image
// relies on (data: URLs in both encodings, decimal modes, owners, units, drop-ins, enablement).
import { describe, expect, it } from 'vitest';
import { installTargets, machineConfigPayload, type MachineConfig, nodeOnlyDropIn } from './node-image.js';

const unit =
  '[Unit]\nDescription=x\n[Service]\nType=oneshot\nExecStart=/usr/local/bin/sno-relocate run --wait 600\n[Install]\nWantedBy=multi-user.target\n';

function mc(config: MachineConfig['spec']['config']): MachineConfig {
  return { metadata: { name: '50-test' }, spec: { config } };
}

describe('MachineConfig content as image entries', () => {
  it('decodes base64 and percent-encoded data: URLs, keeps decimal modes and numeric owners', async () => {
    const payload = await machineConfigPayload([
      mc({
        storage: {
          files: [
            {
              path: '/etc/a',
              mode: 420,
              contents: { source: `data:;base64,${Buffer.from('héllo\n').toString('base64')}` },
            },
            {
              path: '/etc/b',
              mode: 493,
              user: { id: 1000 },
              group: { id: 1000 },
              contents: { source: 'data:,a%20b%0A' },
            },
          ],
          directories: [{ path: '/etc/sno-relocate/trust', mode: 448 }],
        },
      }),
    ]);
    expect(payload.entries).toEqual([
      { path: '/etc/sno-relocate/trust', type: 'dir', mode: 0o700, uid: 0, gid: 0 },
      { path: '/etc/a', mode: 0o644, contents: Buffer.from('héllo\n'), uid: 0, gid: 0 },
      { path: '/etc/b', mode: 0o755, contents: Buffer.from('a b\n'), uid: 1000, gid: 1000 },
    ]);
  });

  it('refuses what it cannot lay offline: remote sources, compression, owners by name', async () => {
    await expect(
      machineConfigPayload([
        mc({ storage: { files: [{ path: '/x', contents: { source: 'https://example.com/x' } }] } }),
      ]),
    ).rejects.toThrow('/x: only data: URLs');
    await expect(
      machineConfigPayload([
        mc({ storage: { files: [{ path: '/x', contents: { source: 'data:,a', compression: 'gzip' } }] } }),
      ]),
    ).rejects.toThrow('compressed');
    await expect(
      machineConfigPayload([mc({ storage: { files: [{ path: '/x', user: { name: 'core' } }] } })]),
    ).rejects.toThrow('user by name (core)');
  });

  it('writes units and drop-ins under /etc/systemd/system, enables by [Install], masks, disables', async () => {
    const payload = await machineConfigPayload([
      mc({
        systemd: {
          units: [
            {
              name: 'sno-relocate.service',
              enabled: true,
              contents: unit,
              dropins: [{ name: '10-env.conf', contents: '[Service]\nEnvironment=A=1\n' }],
            },
            { name: 'kubelet.service', enabled: false },
            { name: 'other.service', mask: true },
          ],
        },
      }),
    ]);
    expect(payload.entries).toEqual([
      { path: '/etc/systemd/system/sno-relocate.service', mode: 0o644, contents: unit },
      {
        path: '/etc/systemd/system/sno-relocate.service.d/10-env.conf',
        mode: 0o644,
        contents: '[Service]\nEnvironment=A=1\n',
      },
      { path: '/etc/systemd/system/other.service', type: 'symlink', target: '/dev/null' },
    ]);
    expect(payload.enable).toEqual([{ unit: 'sno-relocate.service', targets: ['multi-user.target'] }]);
    expect(payload.disable).toEqual(['kubelet.service']);
    expect(nodeOnlyDropIn(payload)).toMatchObject({
      path: '/etc/systemd/system/sno-relocate.service.d/90-vm-node-steps-only.conf',
      contents: expect.stringContaining(
        '\nExecStart=\nExecStart=/usr/local/bin/sno-relocate run --wait 600 --only node\n',
      ),
    });
  });

  it('reads every target of WantedBy= and RequiredBy=, only in [Install]', () => {
    expect(
      installTargets('[Unit]\nWantedBy=no.target\n[Install]\nWantedBy=a.target b.target\nRequiredBy = c.target\n'),
    ).toEqual(['a.target', 'b.target', 'c.target']);
    expect(installTargets('[Service]\nExecStart=/bin/true\n')).toEqual([]);
  });
});
