import { describe, expect, it } from 'vitest';
import { networkAddress, subnetContains } from './addresses.js';

describe('networkAddress', () => {
  it.each([
    ['10.42.0.20/24', '10.42.0.0'],
    ['10.42.0.0/24', '10.42.0.0'],
    ['172.16.5.9/12', '172.16.0.0'],
    ['192.168.127.10/32', '192.168.127.10'],
    ['10.1.2.3/0', '0.0.0.0'],
    ['fd42:0:0:7::20/64', 'fd42:0:0:7::'],
    ['2001:db8:abcd:12ff::1/56', '2001:db8:abcd:1200::'],
    ['fd00::1/128', 'fd00::1'],
  ])('%s -> %s', (cidr, network) => {
    expect(networkAddress(cidr)).toBe(network);
  });
});

describe('subnetContains', () => {
  it.each([
    ['10.42.0.0/24', '10.42.0.200', true],
    ['10.42.0.20/24', '10.42.0.1', true],
    ['10.42.0.0/24', '10.42.1.1', false],
    ['fd00:1:2:3::10/64', 'fd00:1:2:3:ffff::1', true],
    ['fd00:1:2:3::/64', 'fd00:1:2:4::1', false],
    ['10.42.0.0/24', 'fd00::1', false],
    ['0.0.0.0/0', '192.0.2.1', true],
  ])('%s holds %s: %s', (subnet, ip, holds) => {
    expect(subnetContains(subnet, ip)).toBe(holds);
  });
});
