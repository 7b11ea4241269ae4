import { describe, expect, it } from 'vitest';
import { networkAddress } from './addresses.js';

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
