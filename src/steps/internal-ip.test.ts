import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import {
  CRIO_NODE_IP_DROP_IN,
  DISPATCHER_SCRIPT,
  KUBELET_NODE_IP_DROP_IN,
  nodeIpFiles,
  renderKubeletNodeIpDropIn,
} from '../node/internal-ip.js';
import { renderMachineConfigs } from '../node/machineconfig.js';
import { CURRENT_CONFIG } from '../node/rendered-config.js';
import { agentSources } from '../../scripts/render-machineconfigs.js';
import { type InternalIpView, internalIpStep } from './internal-ip.js';
import { planOf } from '../engine/engine.js';

const site = testSite({ network: { internalIP: '192.168.127.10/24' } });

describe('internal-ip', () => {
  it('writes the dispatcher script and the drop-ins, and says the address waits for br-ex', async () => {
    const node = testNode({ site });
    const plan = await planOf(internalIpStep, node.ctx);
    expect(plan.action === 'change' && plan.changes.map((c) => [c.action, c.target, c.summary])).toEqual([
      ['create', DISPATCHER_SCRIPT, 'NetworkManager dispatcher script that keeps the address on br-ex (mode 0755)'],
      ['create', KUBELET_NODE_IP_DROP_IN, 'kubelet drop-in pinning the node IP (mode 0644)'],
      ['create', CRIO_NODE_IP_DROP_IN, 'CRI-O drop-in pinning the stream address (mode 0644)'],
    ]);
    await node.run([internalIpStep]);
    expect(statSync(path.join(node.root, DISPATCHER_SCRIPT)).mode & 0o777).toBe(0o755);
    expect(readFileSync(path.join(node.root, KUBELET_NODE_IP_DROP_IN), 'utf8')).toBe(
      renderKubeletNodeIpDropIn('192.168.127.10/24'),
    );
    // this machine has no br-ex: the address is left to the dispatcher script
    expect(await planOf(internalIpStep, node.ctx)).toEqual({
      action: 'noop',
      reason:
        'kubelet and CRI-O are pinned to 192.168.127.10/24; br-ex does not exist yet, and the dispatcher script adds the address when it comes up',
    });
  });

  it('repairs drift in any of the files', async () => {
    const node = testNode({ site });
    await node.run([internalIpStep]);
    writeFileSync(
      path.join(node.root, KUBELET_NODE_IP_DROP_IN),
      '[Service]\nEnvironment="KUBELET_NODE_IP=10.42.0.20"\n',
    );
    await node.ctx.fs.chmod(DISPATCHER_SCRIPT, 0o644);
    const plan = await planOf(internalIpStep, node.ctx);
    expect(plan.action === 'change' && plan.changes.map((c) => `${c.target}: ${c.summary}`)).toEqual([
      `${DISPATCHER_SCRIPT}: NetworkManager dispatcher script that keeps the address on br-ex (mode 0644, want 0755)`,
      `${KUBELET_NODE_IP_DROP_IN}: kubelet drop-in pinning the node IP (content differs)`,
    ]);
    expect(plan.action === 'change' && plan.changes[1]!.diff).toContain('- Environment="KUBELET_NODE_IP=10.42.0.20"');
    await node.run([internalIpStep]);
    expect(await planOf(internalIpStep, node.ctx)).toMatchObject({ action: 'noop' });
  });

  it('does nothing without an internal IP', async () => {
    expect(await planOf(internalIpStep, testNode().ctx)).toEqual({
      action: 'noop',
      reason: 'the site-config sets no internal IP',
    });
  });

  it("refuses an internal IP other than the machine-config daemon's current config pins, writing nothing", async () => {
    const node = testNode({ site: testSite({ network: { internalIP: '192.168.200.10/24' } }) });
    // the daemon's record: the rendered config holding the factory MachineConfigs' files
    const [, internal] = renderMachineConfigs(agentSources(), { internalIP: '192.168.127.10/24' });
    const rendered = { metadata: { name: 'rendered-master-0a1b2c' }, spec: internal!.spec };
    mkdirSync(path.join(node.root, 'etc/machine-config-daemon'), { recursive: true });
    writeFileSync(path.join(node.root, CURRENT_CONFIG), JSON.stringify(rendered));
    const plan = await planOf(internalIpStep, node.ctx);
    expect(plan.action).toBe('conflict');
    expect(plan.action === 'conflict' && plan.reason).toContain(
      `the internal IP 192.168.200.10/24 differs from the one the factory MachineConfigs pin: ${DISPATCHER_SCRIPT} is a file of the machine-config daemon's current config rendered-master-0a1b2c with other contents`,
    );
    await expect(node.run([internalIpStep])).rejects.toThrow(/refused|differs from the one the factory/);
    expect(existsSync(path.join(node.root, DISPATCHER_SCRIPT))).toBe(false);

    // the factory's own internal IP: the declared files are written as declared (no drift)
    const same = testNode({ site });
    mkdirSync(path.join(same.root, 'etc/machine-config-daemon'), { recursive: true });
    writeFileSync(path.join(same.root, CURRENT_CONFIG), JSON.stringify(rendered));
    await same.run([internalIpStep]);
    for (const f of internal!.spec.config.storage!.files)
      expect(readFileSync(path.join(same.root, f.path), 'utf8')).toBe(
        Buffer.from(f.contents.source.split(',')[1]!, 'base64').toString('utf8'),
      );
  });
});

describe('internal-ip decisions', () => {
  const IP = '192.168.127.10/24';
  const inPlace = Object.fromEntries(nodeIpFiles(IP).map((f) => [f.path, { content: f.content, mode: f.mode }]));
  const declaredOther = { name: 'rendered-master-1', files: new Map([[KUBELET_NODE_IP_DROP_IN, 'other']]) };
  /** the files apply writes, root's, by path */
  const written = (...paths: string[]) =>
    nodeIpFiles(IP)
      .filter((f) => paths.includes(f.path))
      .map(({ path, content, mode }) => ({ path, content, mode, uid: 0, gid: 0 }));
  it.each([
    [
      'files in place, the address first',
      { files: inPlace, addresses: [{ cidr: IP, state: 'first' }] },
      'noop',
      [],
      undefined,
    ],
    [
      'files in place, no br-ex yet',
      { files: inPlace, addresses: [{ cidr: IP, state: 'missing-interface' }] },
      'noop',
      [],
      undefined,
    ],
    [
      'nothing there, no br-ex yet: the files only',
      { files: {}, addresses: [{ cidr: IP, state: 'missing-interface' }] },
      'change',
      [`create ${DISPATCHER_SCRIPT}`, `create ${KUBELET_NODE_IP_DROP_IN}`, `create ${CRIO_NODE_IP_DROP_IN}`],
      { files: written(DISPATCHER_SCRIPT, KUBELET_NODE_IP_DROP_IN, CRIO_NODE_IP_DROP_IN), move: [] },
    ],
    [
      'nothing there, br-ex without the address',
      { files: {}, addresses: [{ cidr: IP, state: 'absent' }] },
      'change',
      [
        `create ${DISPATCHER_SCRIPT}`,
        `create ${KUBELET_NODE_IP_DROP_IN}`,
        `create ${CRIO_NODE_IP_DROP_IN}`,
        'set br-ex',
      ],
      {
        files: written(DISPATCHER_SCRIPT, KUBELET_NODE_IP_DROP_IN, CRIO_NODE_IP_DROP_IN),
        move: [{ cidr: IP, state: 'absent' }],
      },
    ],
    [
      'the address behind another',
      { files: inPlace, addresses: [{ cidr: IP, state: 'behind', first: '10.0.0.5/24' }] },
      'change',
      ['set br-ex'],
      { files: [], move: [{ cidr: IP, state: 'behind' }] },
    ],
    [
      'a drop-in mode drifted',
      {
        files: { ...inPlace, [CRIO_NODE_IP_DROP_IN]: { ...inPlace[CRIO_NODE_IP_DROP_IN]!, mode: 0o600 } },
        addresses: [{ cidr: IP, state: 'first' }],
      },
      'change',
      [`update ${CRIO_NODE_IP_DROP_IN}`],
      { files: written(CRIO_NODE_IP_DROP_IN), move: [] },
    ],
    [
      'the MachineConfigs pin another',
      { declared: declaredOther, files: inPlace, addresses: [{ cidr: IP, state: 'first' }] },
      'conflict',
      [],
      undefined,
    ],
  ] as const)('%s: %s', (_, view, action, changes, decision) => {
    const plan = internalIpStep.plan(view as InternalIpView, testSite({ network: { internalIP: IP } }));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => `${c.action} ${c.target}`) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });

  const DUAL = ['fd69::10/64', '192.168.127.10/24'];
  const dualSite = testSite({ network: { internalIP: DUAL[0], secondaryInternalIP: DUAL[1] } });
  const dualFiles = Object.fromEntries(nodeIpFiles(DUAL).map((f) => [f.path, { content: f.content, mode: f.mode }]));
  it.each([
    ['both first of their family', ['first', 'first'], 'noop', []],
    ['the IPv6 one behind a SLAAC address', ['behind', 'first'], 'change', ['make fd69::10/64 the first']],
    ['the IPv4 one absent', ['first', 'absent'], 'change', ['add 192.168.127.10/24 now']],
    ['both moved', ['absent', 'behind'], 'change', ['add fd69::10/64 now', 'make 192.168.127.10/24 the first']],
  ] as const)('dual-stack, %s', (_, states, action, summaries) => {
    const view = {
      files: dualFiles,
      addresses: DUAL.map((cidr, i) => ({ cidr, state: states[i]!, first: '2001:db8::5/64' })),
    } as InternalIpView;
    const plan = internalIpStep.plan(view, dualSite);
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.summary) : []).toEqual(
      summaries.map((s) => expect.stringContaining(s)),
    );
    // each moved address, in the order of the families, and no file: they are in place
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(
      action === 'change'
        ? { files: [], move: DUAL.flatMap((cidr, i) => (states[i] === 'first' ? [] : [{ cidr, state: states[i] }])) }
        : undefined,
    );
  });

  it('dual-stack: the files name both, the primary family first', () => {
    expect(dualFiles[KUBELET_NODE_IP_DROP_IN]!.content).toContain(
      'Environment="KUBELET_NODE_IP=fd69::10" "KUBELET_NODE_IPS=fd69::10,192.168.127.10"',
    );
    expect(dualFiles[CRIO_NODE_IP_DROP_IN]!.content).toContain('CONTAINER_STREAM_ADDRESS=fd69::10"');
    expect(internalIpStep.plan({ files: dualFiles, addresses: [] }, dualSite)).toMatchObject({
      action: 'noop',
      reason: expect.stringContaining('fd69::10/64 and 192.168.127.10/24 are each the first address of its family'),
    });
  });

  it('is noop without an internal IP in the site-config', () => {
    expect(internalIpStep.plan(undefined, testSite())).toEqual({
      action: 'noop',
      reason: 'the site-config sets no internal IP',
    });
  });
});
