import { describe, expect, it } from 'vitest';
import { createLogger } from '../log/logger.js';
import { createExec } from '../ports/exec.js';
import { canonicalIp, isLinkLocal, parseCidr } from '../base/addresses.js';
import { firstNodeAddress, interfaceAddresses } from './addresses.js';

describe('addresses', () => {
  it('writes IPv6 in canonical form and keeps IPv4 as it is', () => {
    expect(canonicalIp('2001:DB8:0:0:0::1')).toBe('2001:db8::1');
    expect(canonicalIp('10.0.0.1')).toBe('10.0.0.1');
    expect(parseCidr('FD00::0010/64')).toEqual({ ip: 'fd00::10', prefix: 64, family: 6 });
    expect(parseCidr('10.1.2.3')).toEqual({ ip: '10.1.2.3', prefix: 32, family: 4 });
    expect(() => parseCidr('10.1.2.3/40')).toThrow('not an IP address with prefix length: 10.1.2.3/40');
    expect(isLinkLocal('FE80::1')).toBe(true);
    expect(isLinkLocal('fd00::1')).toBe(false);
  });

  it('reads the loopback addresses with ip, and says when an interface does not exist', async () => {
    const exec = createExec(createLogger({ write: () => undefined, journal: false }));
    expect(await interfaceAddresses(exec, 'lo')).toContain('127.0.0.1/8');
    expect(await interfaceAddresses(exec, 'no-such-if0')).toBeUndefined();
    expect(await firstNodeAddress(exec, 'lo', 4)).toBe('127.0.0.1/8');
    expect(await firstNodeAddress(exec, 'no-such-if0', 4)).toBeUndefined();
  });
});
