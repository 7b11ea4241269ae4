import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import { compareFamilies, familiesOf, type IpFamiliesView } from './ip-families.js';

const V4_FIRST: IpFamiliesView = { clusterNetwork: ['IPv4', 'IPv6'], serviceNetwork: ['IPv4', 'IPv6'] };
const V6_FIRST: IpFamiliesView = { clusterNetwork: ['IPv6', 'IPv4'], serviceNetwork: ['IPv6', 'IPv4'] };
const V4_ONLY: IpFamiliesView = { clusterNetwork: ['IPv4'], serviceNetwork: ['IPv4'] };
const V6_ONLY: IpFamiliesView = { clusterNetwork: ['IPv6'], serviceNetwork: ['IPv6'] };
const v4 = '192.168.127.10/24';
const v6 = 'fd69::10/64';
const site = (internal: string[], machineNetworks: string[] = []) =>
  testSite({
    network: {
      ...(internal[0] !== undefined && { internalIP: internal[0] }),
      ...(internal[1] !== undefined && { secondaryInternalIP: internal[1] }),
      machineNetworks,
    },
  });

describe('ip-families decisions', () => {
  it('lists each family once, in the order it first appears', () => {
    expect(familiesOf(['fd01::/48', '10.128.0.0/14', 'fd02::/48'])).toEqual(['IPv6', 'IPv4']);
  });

  it.each([
    ['IPv4 single stack', V4_ONLY, [v4], [], 'noop'],
    ['IPv6 single stack', V6_ONLY, [v6], ['fd00:42::/64'], 'noop'],
    ['dual-stack, IPv4 primary', V4_FIRST, [v4, v6], ['10.42.0.0/24', 'fd00:42::/64'], 'noop'],
    ['dual-stack, IPv6 primary', V6_FIRST, [v6, v4], ['fd00:42::/64', '10.42.0.0/24'], 'noop'],
    ['dual-stack, one machine network', V6_FIRST, [v6, v4], ['10.42.0.0/24'], 'noop'],
    ['no internal IP', V6_FIRST, [], [], 'noop'],
    ['no Network config', {}, [v6, v4], [], 'noop'],
    [
      'internal IPs in the other order',
      V6_FIRST,
      [v4, v6],
      [],
      "spec.network.internalIP is IPv4, IPv6, but the cluster's Network config (spec.clusterNetwork) is IPv6, IPv4",
    ],
    [
      'machine networks in the other order',
      V4_FIRST,
      [v4, v6],
      ['fd00:42::/64', '10.42.0.0/24'],
      "spec.network.machineNetworks is IPv6, IPv4, but the cluster's Network config (spec.clusterNetwork) is IPv4, IPv6",
    ],
    [
      'one family on a dual-stack cluster',
      V4_FIRST,
      [v4],
      [],
      "spec.network.internalIP is IPv4 only, but the cluster's Network config (spec.clusterNetwork) is IPv4, IPv6",
    ],
    [
      'dual-stack on an IPv4 cluster',
      V4_ONLY,
      [v4, v6],
      [],
      "spec.network.internalIP is IPv4, IPv6, but the cluster's Network config (spec.clusterNetwork) is IPv4 only",
    ],
    [
      'an IPv6 machine network on an IPv4 cluster',
      V4_ONLY,
      [v4],
      ['fd00:42::/64'],
      "spec.network.machineNetworks is IPv6 only, but the cluster's Network config (spec.clusterNetwork) is IPv4 only",
    ],
    [
      'only the service network to go by',
      { serviceNetwork: ['IPv6', 'IPv4'] },
      [v4, v6],
      [],
      "spec.network.internalIP is IPv4, IPv6, but the cluster's Network config (spec.serviceNetwork) is IPv6, IPv4",
    ],
  ] as const)('%s', (_, view, internal, machine, outcome) => {
    const plan = compareFamilies(view, site([...internal], [...machine]));
    if (outcome === 'noop') expect(plan.action).toBe('noop');
    else expect(plan).toEqual({ action: 'conflict', reason: expect.stringContaining(outcome) });
  });
});
