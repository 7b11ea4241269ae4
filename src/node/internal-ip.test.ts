import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  CRIO_NODE_IP_DROP_IN,
  nodeIpFiles,
  renderCrioNodeIpDropIn,
  renderDispatcherScript,
  pinnedInternalIPs,
  renderKubeletNodeIpDropIn,
} from './internal-ip.js';

describe('node IP renderers', () => {
  it('pin kubelet and CRI-O to the address without its prefix length', () => {
    expect(renderKubeletNodeIpDropIn('192.168.127.10/24')).toContain(
      '\n[Service]\nEnvironment="KUBELET_NODE_IP=192.168.127.10" "KUBELET_NODE_IPS=192.168.127.10"\n',
    );
    expect(renderCrioNodeIpDropIn('192.168.127.10/24')).toContain(
      '\n[Service]\nEnvironment="CONTAINER_STREAM_ADDRESS=192.168.127.10"\n',
    );
    expect(renderKubeletNodeIpDropIn('FD00:0:0::10/64')).toContain('KUBELET_NODE_IP=fd00::10"');
    // a crio.service drop-in sorting after OpenShift's 20-nodenet.conf, whose value it must override
    expect(CRIO_NODE_IP_DROP_IN).toBe('/etc/systemd/system/crio.service.d/30-sno-relocate-node-ip.conf');
  });

  it('renders a dispatcher script that the shell parses and that acts on br-ex only', () => {
    const script = renderDispatcherScript('192.168.127.10/24');
    expect(script.startsWith('#!/bin/sh\n')).toBe(true);
    expect(script).toContain('[ "$1" = "br-ex" ] || exit 0');
    expect(script).toContain('ip() { /usr/sbin/ip -4 "$@"; }\nip addr replace 192.168.127.10/24 dev br-ex || exit 1\n');
    const v6 = renderDispatcherScript('fd00::10/64');
    expect(v6).toContain('ip() { /usr/sbin/ip -6 "$@"; }\nip addr replace fd00::10/64 dev br-ex nodad || exit 1\n');
    execFileSync('sh', ['-n', '-c', script]);
  });

  it.each([
    ['IPv4 primary', ['192.168.127.10/24', 'fd69::10/64'], '192.168.127.10', '192.168.127.10,fd69::10'],
    ['IPv6 primary', ['fd69::10/64', '192.168.127.10/24'], 'fd69::10', 'fd69::10,192.168.127.10'],
  ])(
    'dual-stack, %s: kubelet gets both in order, CRI-O the primary, the script keeps each family',
    (_, ips, primary, all) => {
      expect(renderKubeletNodeIpDropIn(ips)).toContain(
        `Environment="KUBELET_NODE_IP=${primary}" "KUBELET_NODE_IPS=${all}"\n`,
      );
      expect(renderCrioNodeIpDropIn(ips)).toContain(`Environment="CONTAINER_STREAM_ADDRESS=${primary}"\n`);
      const script = renderDispatcherScript(ips);
      execFileSync('sh', ['-n', '-c', script]);
      expect(script).toContain(
        '  ip() { /usr/sbin/ip -4 "$@"; }\n  ip addr replace 192.168.127.10/24 dev br-ex || exit 1\n',
      );
      expect(script).toContain(
        '  ip() { /usr/sbin/ip -6 "$@"; }\n  ip addr replace fd69::10/64 dev br-ex nodad || exit 1\n',
      );
      const calls = ips.map((ip) => `keep_first_ipv${ip.includes(':') ? 6 : 4} || exit 1\n`).join('');
      expect(script.endsWith(`)\n${calls}exit 0\n`)).toBe(true);
      expect(pinnedInternalIPs(script)).toEqual(ips);
      expect(pinnedInternalIPs(renderDispatcherScript(ips[0]!))).toEqual([ips[0]]);
      expect(pinnedInternalIPs('#!/bin/sh\nip addr replace 10.0.0.1/24 dev br-ex\n')).toEqual([]);
    },
  );

  it('refuses two addresses of one family, or more than two', () => {
    expect(() => renderKubeletNodeIpDropIn(['192.168.127.10/24', '192.168.128.10/24'])).toThrow('one per IP family');
    expect(() => renderDispatcherScript(['192.168.127.10/24', 'fd69::10/64', 'fd70::10/64'])).toThrow(
      'one per IP family',
    );
  });

  it('refuses an address without a prefix length or that is no address, naming it', () => {
    expect(() => renderDispatcherScript('192.168.127.10')).toThrow(
      'internal IP: not an IP address with prefix length (CIDR): "192.168.127.10"',
    );
    expect(() => renderKubeletNodeIpDropIn('192.168.127.300/24')).toThrow('internal IP');
    expect(() => renderCrioNodeIpDropIn('10.0.0.1/33')).toThrow('internal IP');
  });

  it('lists the three files with their modes', () => {
    expect(nodeIpFiles('192.168.127.10/24').map((f) => [f.path, f.mode.toString(8)])).toEqual([
      ['/etc/NetworkManager/dispatcher.d/30-sno-relocate-internal-ip', '755'],
      ['/etc/systemd/system/kubelet.service.d/30-sno-relocate-node-ip.conf', '644'],
      ['/etc/systemd/system/crio.service.d/30-sno-relocate-node-ip.conf', '644'],
    ]);
  });
});
