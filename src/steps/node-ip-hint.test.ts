import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { CURRENT_CONFIG } from '../node/rendered-config.js';
import { NODEIP_HINT_FILE, nodeIpHintStep, renderNodeIpHint } from './node-ip-hint.js';
import { planOf } from '../engine/engine.js';

const site = (machineNetworks: string[]) => testSite({ network: { internalIP: '192.168.127.10/24', machineNetworks } });

describe('node-ip-hint', () => {
  it('writes the network address of each machine network, space separated, as nodeip-configuration reads it', async () => {
    const node = testNode({ site: site(['10.42.0.0/24', 'fd42:0:0:7::/64']) });
    await node.run([nodeIpHintStep]);
    const text = readFileSync(path.join(node.root, NODEIP_HINT_FILE), 'utf8');
    expect(text.split('\n').filter((l) => !l.startsWith('#'))).toEqual([
      'KUBELET_NODEIP_HINT=10.42.0.0 fd42:0:0:7::',
      '',
    ]);
    expect(await planOf(nodeIpHintStep, node.ctx)).toMatchObject({ action: 'noop' });
  });

  it('names a network, never a host address the node-ip tool would skip as a VIP', () => {
    expect(renderNodeIpHint(['10.42.0.20/24'])).toContain('KUBELET_NODEIP_HINT=10.42.0.0\n');
  });

  it("removes an earlier site's hint, and leaves one it did not write alone", async () => {
    const node = testNode({ site: site(['10.42.0.0/24']) });
    await node.run([nodeIpHintStep]);
    const later = { ...node.ctx, site: site([]) };
    const plan = nodeIpHintStep.plan(await nodeIpHintStep.survey(later), later.site);
    expect(plan).toMatchObject({ action: 'change', changes: [{ action: 'delete' }] });
    if (plan.action !== 'change') throw new Error('expected a change');
    await nodeIpHintStep.apply!(later, plan.decision);
    expect(existsSync(path.join(node.root, NODEIP_HINT_FILE))).toBe(false);

    writeFileSync(path.join(node.root, NODEIP_HINT_FILE), 'KUBELET_NODEIP_HINT=10.1.0.0\n');
    expect(await planOf(nodeIpHintStep, later)).toMatchObject({ action: 'noop' });
  });

  it("refuses to write the file when the machine-config daemon's current config declares other contents", async () => {
    const node = testNode({ site: site(['10.42.0.0/24']) });
    const source = `data:,${encodeURIComponent('KUBELET_NODEIP_HINT=10.1.0.0\n')}`;
    mkdirSync(path.join(node.root, 'etc/machine-config-daemon'), { recursive: true });
    writeFileSync(
      path.join(node.root, CURRENT_CONFIG),
      JSON.stringify({
        metadata: { name: 'rendered-master-0a1b2c' },
        spec: { config: { storage: { files: [{ path: NODEIP_HINT_FILE, contents: { source } }] } } },
      }),
    );
    const plan = await planOf(nodeIpHintStep, node.ctx);
    expect(plan).toMatchObject({ action: 'conflict' });
    expect(plan.action === 'conflict' && plan.reason).toContain(
      `${NODEIP_HINT_FILE} is a file of the machine-config daemon's current config rendered-master-0a1b2c`,
    );
  });

  it('reruns when the machine networks change: they are its inputs', () => {
    expect(nodeIpHintStep.inputs(site(['10.42.0.0/24']))).not.toEqual(nodeIpHintStep.inputs(site(['10.43.0.0/24'])));
  });
});

describe('node-ip-hint decisions', () => {
  const hint = renderNodeIpHint(['192.0.2.0/24']);
  const write = (networks: string[]) => ({
    action: 'write',
    file: { path: NODEIP_HINT_FILE, content: renderNodeIpHint(networks), mode: 0o644, uid: 0, gid: 0 },
    networks,
  });
  it.each([
    ['no networks, no file', {}, [], 'noop', [], undefined],
    [
      'no networks, a hint of its own',
      { hint: { content: hint, mode: 0o644 } },
      [],
      'change',
      ['delete'],
      { action: 'remove', path: NODEIP_HINT_FILE },
    ],
    [
      'no networks, a hint of someone else',
      { hint: { content: 'KUBELET_NODEIP_HINT=10.0.0.0\n', mode: 0o644 } },
      [],
      'noop',
      [],
      undefined,
    ],
    ['a network, no file', {}, ['192.0.2.0/24'], 'change', ['create'], write(['192.0.2.0/24'])],
    ['a network, in place', { hint: { content: hint, mode: 0o644 } }, ['192.0.2.0/24'], 'noop', [], undefined],
    [
      'another network',
      { hint: { content: hint, mode: 0o644 } },
      ['198.51.100.0/24'],
      'change',
      ['update'],
      write(['198.51.100.0/24']),
    ],
    [
      'in place, mode wrong',
      { hint: { content: hint, mode: 0o600 } },
      ['192.0.2.0/24'],
      'change',
      ['update'],
      write(['192.0.2.0/24']),
    ],
    [
      'the rendered config declares another hint',
      { declared: { name: 'rendered-master-1', files: new Map([[NODEIP_HINT_FILE, 'x']]) } },
      ['192.0.2.0/24'],
      'conflict',
      [],
      undefined,
    ],
  ] as const)('%s', (_, view, networks, action, changes, decision) => {
    const plan = nodeIpHintStep.plan(view, site([...networks]));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.action) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
