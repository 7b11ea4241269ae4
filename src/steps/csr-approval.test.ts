/**
 * The names a kubelet request of this node may carry: the hostname, the site's static addresses,
 * the internal IP, and what br-ex holds right now (a DHCP site names no address of its own). `ip`
 * is answered as `ip -j addr show dev br-ex` prints on a node.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StepContext } from './step.js';
import type { Exec } from '../ports/exec.js';
import { createRootFs } from '../ports/fs.js';
import { testSite } from '../../test/node/context.js';
import { bootstrapperClientSpec } from '../../test/kube/csr-requests.js';
import { KUBELET_SERVING_SIGNER, type CsrKind } from '../kube/csr.js';
import { nodeIdentity } from '../node/kubelet-csrs.js';
import { csrApprovalStep } from './csr-approval.js';

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
  return { site, exec, fs: createRootFs(root), stateDir: '/var/lib/sno-relocate' } as unknown as StepContext;
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

describe('csr-approval decisions', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'csr-plan-'));
  /** a request made by the real openssl, with the key type kubelet uses */
  const request = (subject: string, sans?: string) => {
    const out = path.join(dir, `${Math.random().toString(36).slice(2)}.csr`);
    execFileSync(
      'openssl',
      ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${out}.key`].concat(
        ['-subj', subject, ...(sans ? ['-addext', `subjectAltName=${sans}`] : []), '-out', out],
      ),
      { stdio: 'pipe' },
    );
    return Buffer.from(readFileSync(out, 'utf8')).toString('base64');
  };
  const node = { hostname: 'sno-store42', ips: ['192.168.127.10'] };
  const clientReq = request('/O=system:nodes/CN=system:node:sno-store42');
  const otherReq = request('/O=system:nodes/CN=system:node:someone-else');
  const servingReq = request('/O=system:nodes/CN=system:node:sno-store42', 'DNS:sno-store42,IP:192.168.127.10');
  const approved = { conditions: [{ type: 'Approved', status: 'True' }] };
  const csr = (name: string, req: string, kind: 'client' | 'serving', status?: typeof approved) => ({
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name },
    spec:
      kind === 'client'
        ? bootstrapperClientSpec(req)
        : {
            request: req,
            signerName: KUBELET_SERVING_SIGNER,
            usages: ['digital signature', 'server auth'],
            username: 'system:node:sno-store42',
            groups: ['system:nodes', 'system:authenticated'],
          },
    ...(status && { status }),
  });
  const left = [{ name: 'c2', why: expect.stringContaining('someone-else') as string }];
  type Row = [string, ReturnType<typeof csr>[], CsrKind[], 'change' | 'noop', string[], typeof left?, CsrKind[]?];
  it.each<Row>([
    ['nothing filed yet', [], [], 'change', [], [], ['client', 'serving']],
    ['a client request of this node', [csr('c1', clientReq, 'client')], [], 'change', ['c1'], [], ['serving']],
    [
      "another node's request is left alone",
      [csr('c2', otherReq, 'client')],
      [],
      'change',
      [],
      left,
      ['client', 'serving'],
    ],
    [
      'client approved, serving pending',
      [csr('c1', clientReq, 'client', approved), csr('s1', servingReq, 'serving')],
      [],
      'change',
      ['s1'],
      [],
      [],
    ],
    [
      'both approved',
      [csr('c1', clientReq, 'client', approved), csr('s1', servingReq, 'serving', approved)],
      [],
      'noop',
      [],
    ],
    ['both certificates on disk', [], ['client', 'serving'], 'noop', []],
    ['the client certificate on disk', [], ['client'], 'change', [], [], ['serving']],
  ])('%s', (_, csrs, issued, action, approvals, leftAlone, waitFor) => {
    const plan = csrApprovalStep.plan({ node, csrs, issued }, testSite());
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.target.split(' ')[1]) : []).toEqual(approvals);
    if (plan.action === 'change')
      expect(plan.decision).toEqual({
        approve: approvals.map((name) => ({
          name,
          kind: name.startsWith('c') ? 'client' : 'serving',
          why: expect.any(String),
        })),
        leftAlone,
        waitFor,
      });
  });
});
