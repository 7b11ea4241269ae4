/**
 * The node and workstation halves of the factory commands, with the built executable: the
 * manifests for an installation, refused for an install-config that is not a relocatable cluster;
 * and a prepared node refusing (validate, plan, run) a site-config that moves the internal IP off
 * its install subnet.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import type { MachineConfig } from '../../src/node/machineconfig.js';
import { runCli } from '../helpers/cli.js';
import { installConfig, siteWithInternalIP } from './env.js';

describe('factory prepare --manifests (before installation)', () => {
  it("writes the MachineConfigs for the installer's manifests, pinned to the given address, without the kubelet gate", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'factory-manifests-'));
    const out = path.join(dir, 'openshift');
    const r = runCli([
      'factory', 'prepare', '--manifests', out, '--install-config', installConfig(dir), '--internal-ip', '192.168.127.10/24',
    ]); // prettier-ignore
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`wrote ${out}/50-master-sno-relocate.yaml`);
    expect(r.stdout).toContain('once installed, run factory prepare on the node to arm it');
    const agent = yaml.load(readFileSync(path.join(out, '50-master-sno-relocate.yaml'), 'utf8')) as MachineConfig;
    const units = agent.spec.config.systemd!.units.map((u) => u.name);
    expect(units).toContain('sno-relocate.service');
    expect(units).not.toContain('kubelet.service');
    const ip = yaml.load(
      readFileSync(path.join(out, '51-master-sno-relocate-internal-ip.yaml'), 'utf8'),
    ) as MachineConfig;
    const dropIn = ip.spec.config.storage!.files.find((f) =>
      f.path.endsWith('kubelet.service.d/30-sno-relocate-node-ip.conf'),
    )!;
    expect(Buffer.from(dropIn.contents.source.split(',')[1]!, 'base64').toString()).toContain(
      'KUBELET_NODE_IP=192.168.127.10',
    );
  });

  it('refuses an install-config that is not a relocatable cluster, naming each field, and writes nothing', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'factory-manifests-'));
    const file = installConfig(dir, {
      controlPlane: { name: 'master', replicas: 3 },
      compute: [{ name: 'worker', replicas: 2 }],
      networking: { networkType: 'OpenShiftSDN', machineNetwork: [{ cidr: '10.0.0.0/16' }] },
      platform: { baremetal: {} },
    });
    const out = path.join(dir, 'openshift');
    const r = runCli([
      'factory',
      'prepare',
      '--manifests',
      out,
      '--install-config',
      file,
      '--internal-ip',
      '192.168.127.10/24',
    ]);
    expect(r.code).toBe(3);
    for (const named of [
      '$.controlPlane.replicas: 3',
      '$.compute[0].replicas: 2',
      '$.networking.networkType: OpenShiftSDN',
      '$.platform: baremetal',
      '$.networking.machineNetwork: 10.0.0.0/16 holds no network 192.168.127.10/24 belongs to',
    ])
      expect(r.stderr).toContain(named);
    expect(existsSync(out)).toBe(false);
  });

  it('needs the install-config and the internal IP (exit 2, naming the flags)', () => {
    const r = runCli(['factory', 'prepare', '--manifests', path.join(tmpdir(), 'never')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('needs --install-config FILE');
    const bad = runCli([
      'factory',
      'prepare',
      '--manifests',
      'x',
      '--install-config',
      'y',
      '--internal-ip',
      '192.168.127.10',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--internal-ip: not an IP address with prefix length (CIDR)');
    const onNode = runCli(['factory', 'prepare', '--internal-ip', '192.168.127.10/24']);
    expect(onNode.code).toBe(2);
    expect(onNode.stderr).toContain(
      "--internal-ip is for --manifests (before installation); on the node the internal IP is br-ex's install address",
    );
    const tag = runCli(['factory', 'prepare', '--image', 'registry.example.com/sno-relocate/agent:latest']);
    expect(tag.code).toBe(2);
    expect(tag.stderr).toContain('--image: name the image by digest');
  });
});

describe('a prepared node and the internal IP of a site-config', () => {
  function preparedNode(): string {
    const root = mkdtempSync(path.join(tmpdir(), 'factory-record-'));
    mkdirSync(path.join(root, 'etc/sno-relocate'), { recursive: true });
    writeFileSync(
      path.join(root, 'etc/sno-relocate/factory.json'),
      JSON.stringify({
        version: 1,
        node: 'sno-factory',
        installAddress: '192.168.127.10/24',
        installSubnet: '192.168.127.0/24',
        internalIP: '192.168.127.10/24',
        preparedAt: '2026-11-01T00:00:00.000Z',
      }),
    );
    return root;
  }
  it('validate and plan refuse an internal IP off the install subnet (exit 3), naming the field and the record', () => {
    const root = preparedNode();
    const site = siteWithInternalIP('10.20.0.10/24');
    for (const command of [['validate'], ['plan', '--only', 'node']]) {
      const r = runCli([...command, site, '--root', root]);
      expect(r.code, command[0]).toBe(3);
      expect(r.stderr).toContain(
        '$.spec.network.internalIP: 10.20.0.10/24 is off the install subnet 192.168.127.0/24 of this node (recorded by factory prepare in /etc/sno-relocate/factory.json)',
      );
      expect(r.stderr).toContain('set it to 192.168.127.10/24');
    }
  });

  it('a wider prefix is off the subnet too; the install address itself passes', () => {
    const root = preparedNode();
    expect(runCli(['validate', siteWithInternalIP('192.168.127.10/16'), '--root', root]).code).toBe(3);
    const ok = runCli(['validate', siteWithInternalIP('192.168.127.10/24'), '--root', root]);
    expect(ok.stdout).toContain('site-config valid');
    expect(ok.code).toBe(0);
  });

  it('a node without the record (never prepared) takes any internal IP, as before', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'factory-unprepared-'));
    expect(runCli(['validate', siteWithInternalIP('10.20.0.10/24'), '--root', root]).code).toBe(0);
  });
});
