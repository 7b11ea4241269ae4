/**
 * What applying a MachineConfig costs the node, by the machine-config daemon's default disruption
 * policy, and the subnet factory prepare records for the install address.
 */
import { describe, expect, it } from 'vitest';
import { configChange, fileDisruption } from '../../src/factory/disruption.js';
import { subnetOf } from '../../src/node/factory-record.js';
import { dataUrl, type MachineConfig } from '../../src/node/machineconfig.js';

function mc(files: Record<string, string>, units: { name: string; enabled: boolean }[] = []): MachineConfig {
  return {
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'MachineConfig',
    metadata: { name: '99-test', labels: {} },
    spec: {
      config: {
        ignition: { version: '3.2.0' },
        storage: {
          files: Object.entries(files).map(([path, text]) => ({
            path,
            mode: 0o644,
            overwrite: true as const,
            contents: { source: dataUrl(text) },
          })),
        },
        systemd: { units },
      },
    },
  };
}

describe('the cost of a MachineConfig change', () => {
  it('follows the default policy file by file', () => {
    expect(fileDisruption('/var/lib/kubelet/config.json')).toBe('none');
    expect(fileDisruption('/etc/containers/registries.conf')).toBe('reload crio');
    expect(fileDisruption('/etc/containers/registries.d/sigstore.yaml')).toBe('reload crio');
    expect(fileDisruption('/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt')).toBe('restart crio');
    expect(fileDisruption('/etc/containers/registries.conf.d/x.conf')).toBe('reboot');
    expect(fileDisruption('/etc/sno-relocate/install.env')).toBe('reboot');
  });

  it('takes the costliest change, names only what changed, and a unit always reboots', () => {
    const before = mc({ '/var/lib/kubelet/config.json': 'a', '/etc/containers/registries.conf': 'r' });
    expect(configChange(before, before)).toMatchObject({
      files: [],
      units: [],
      disruption: 'none',
      because: 'nothing changes',
    });
    const pull = mc({ '/var/lib/kubelet/config.json': 'b', '/etc/containers/registries.conf': 'r' });
    expect(configChange(before, pull)).toMatchObject({ files: ['/var/lib/kubelet/config.json'], disruption: 'none' });
    const mirrors = mc({ '/var/lib/kubelet/config.json': 'b', '/etc/containers/registries.conf': 's' });
    expect(configChange(before, mirrors).disruption).toBe('reload crio');
    const unit = mc({ '/var/lib/kubelet/config.json': 'a', '/etc/containers/registries.conf': 'r' }, [
      { name: 'kubelet.service', enabled: true },
    ]);
    expect(configChange(before, unit)).toMatchObject({ units: ['kubelet.service'], disruption: 'reboot' });
    expect(configChange(undefined, before).files).toEqual([
      '/etc/containers/registries.conf',
      '/var/lib/kubelet/config.json',
    ]);
  });
});

describe('the install subnet', () => {
  it('is the address with its host bits cleared', () => {
    expect(subnetOf('192.168.127.10/24')).toBe('192.168.127.0/24');
    expect(subnetOf('10.1.255.254/15')).toBe('10.0.0.0/15');
    expect(subnetOf('10.1.2.3/32')).toBe('10.1.2.3/32');
    expect(subnetOf('fd00:1:2:3::10/64')).toBe('fd00:1:2:3::/64');
    expect(subnetOf('2001:db8::ffff/120')).toBe('2001:db8::ff00/120');
  });
});
