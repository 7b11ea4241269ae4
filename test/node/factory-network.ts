/**
 * The network of a factory-fresh node as `nmstatectl show` reports it: OVN's br-ex over the first
 * NIC with a factory DHCP lease, plus the internal IP the factory MachineConfig keeps on br-ex.
 */
import type { NmstateState } from '../../src/base/nmstate.js';

export const FACTORY_INTERNAL_IP = '192.168.127.10/24';

export function factoryNetwork(): NmstateState {
  return {
    interfaces: [
      {
        name: 'lo',
        type: 'loopback',
        state: 'up',
        mtu: 65536,
        ipv4: { enabled: true, address: [{ ip: '127.0.0.1', 'prefix-length': 8 }] },
        ipv6: { enabled: true, address: [{ ip: '::1', 'prefix-length': 128 }] },
      },
      {
        name: 'ens3',
        type: 'ethernet',
        state: 'up',
        'mac-address': '52:54:00:12:34:56',
        mtu: 1500,
        ipv4: { enabled: false },
        ipv6: { enabled: false },
      },
      {
        name: 'ens4',
        type: 'ethernet',
        state: 'up',
        'mac-address': '52:54:00:12:34:57',
        mtu: 1500,
        ipv4: { enabled: false },
        ipv6: { enabled: false },
      },
      { name: 'br-ex', type: 'ovs-bridge', state: 'up', bridge: { port: [{ name: 'ens3' }, { name: 'br-ex' }] } },
      {
        name: 'br-ex',
        type: 'ovs-interface',
        state: 'up',
        mtu: 1500,
        ipv4: {
          enabled: true,
          dhcp: true,
          address: [
            { ip: '192.168.1.50', 'prefix-length': 24 },
            { ip: '192.168.127.10', 'prefix-length': 24 },
          ],
        },
        ipv6: {
          enabled: true,
          autoconf: false,
          dhcp: false,
          address: [{ ip: 'fe80::5054:ff:fe12:3456', 'prefix-length': 64 }],
        },
      },
    ],
    routes: {
      running: [{ destination: '0.0.0.0/0', 'next-hop-address': '192.168.1.1', 'next-hop-interface': 'br-ex' }],
      config: [],
    },
    'dns-resolver': { running: { server: ['192.168.1.1'], search: [] }, config: {} },
  };
}
