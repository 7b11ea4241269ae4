/**
 * The names a kubelet request of this node may carry: the hostname, the site's static addresses,
 * the internal IP, and what br-ex holds right now (a DHCP site names no address of its own). `ip`
 * is answered as `ip -j addr show dev br-ex` prints on a node.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StepContext } from '../config/site.js';
import type { Exec } from '../ports/exec.js';
import { createRootFs } from '../ports/fs.js';
import { testSite } from '../../test/node/context.js';
import { nodeIdentity } from './csr-approval.js';

const brEx = (addrs: { local: string; prefixlen: number }[]): Exec => ({
  run: async (command, args) => {
    expect([command, ...args]).toEqual(['ip', '-j', 'addr', 'show', 'dev', 'br-ex']);
    return { code: 0, stdout: JSON.stringify([{ ifname: 'br-ex', addr_info: addrs }]), stderr: '' };
  },
});
const noBrEx: Exec = { run: async () => ({ code: 1, stdout: '', stderr: 'Device "br-ex" does not exist.' }) };

/** a node whose kubelet node-name pinned to its factory name */
function ctx(site: ReturnType<typeof testSite>, exec: Exec) {
  const root = mkdtempSync(path.join(tmpdir(), 'csr-id-'));
  mkdirSync(path.join(root, 'etc/kubernetes'), { recursive: true });
  writeFileSync(path.join(root, 'etc/kubernetes/kubelet-env'), 'KUBELET_NODE_NAME=sno-factory\n');
  return { site, exec, fs: createRootFs(root) } as unknown as StepContext;
}

describe('nodeIdentity', () => {
  it('takes the address a DHCP site got on br-ex, never a link-local one', async () => {
    const site = testSite({
      hostname: 'sno-store42',
      network: {
        nmstate: {
          interfaces: [{ name: 'br-ex', type: 'ovs-interface', state: 'up', ipv4: { enabled: true, dhcp: true } }],
        },
        internalIP: '192.168.127.10/24',
      },
    });
    const live = brEx([
      { local: '10.42.0.77', prefixlen: 24 },
      { local: '192.168.127.10', prefixlen: 24 },
      { local: 'fe80::1', prefixlen: 64 },
      { local: '2001:db8::77', prefixlen: 64 },
    ]);
    const id = await nodeIdentity(ctx(site, live));
    // the requests name the Node kubelet registers, which keeps its name; the site hostname is the OS's
    expect(id.hostname).toBe('sno-factory');
    expect([...id.ips].sort()).toEqual(['10.42.0.77', '192.168.127.10', '2001:db8::77']);
  });

  it('keeps the static addresses of the site when br-ex is not there yet', async () => {
    const site = testSite({
      hostname: 'sno-store42',
      network: {
        nmstate: {
          interfaces: [
            {
              name: 'br-ex',
              type: 'ovs-interface',
              state: 'up',
              ipv4: { enabled: true, dhcp: false, address: [{ ip: '10.42.0.20', 'prefix-length': 24 }] },
            },
          ],
        },
      },
    });
    expect((await nodeIdentity(ctx(site, noBrEx))).ips).toEqual(['10.42.0.20']);
  });
});
