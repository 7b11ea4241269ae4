import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { CURRENT_CONFIG } from '../node/rendered-config.js';
import { NODEIP_HINT_FILE, nodeIpHintStep, renderNodeIpHint } from './node-ip-hint.js';

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
    expect(await nodeIpHintStep.plan(node.ctx)).toMatchObject({ action: 'noop' });
  });

  it('names a network, never a host address the node-ip tool would skip as a VIP', () => {
    expect(renderNodeIpHint(['10.42.0.20/24'])).toContain('KUBELET_NODEIP_HINT=10.42.0.0\n');
  });

  it("removes an earlier site's hint, and leaves one it did not write alone", async () => {
    const node = testNode({ site: site(['10.42.0.0/24']) });
    await node.run([nodeIpHintStep]);
    const later = { ...node.ctx, site: site([]) };
    expect(await nodeIpHintStep.plan(later)).toMatchObject({ action: 'change', changes: [{ action: 'delete' }] });
    await nodeIpHintStep.apply(later, { action: 'change', summary: '', changes: [] });
    expect(existsSync(path.join(node.root, NODEIP_HINT_FILE))).toBe(false);

    writeFileSync(path.join(node.root, NODEIP_HINT_FILE), 'KUBELET_NODEIP_HINT=10.1.0.0\n');
    expect(await nodeIpHintStep.plan(later)).toMatchObject({ action: 'noop' });
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
    const plan = await nodeIpHintStep.plan(node.ctx);
    expect(plan).toMatchObject({ action: 'conflict' });
    expect(plan.action === 'conflict' && plan.reason).toContain(
      `${NODEIP_HINT_FILE} is a file of the machine-config daemon's current config rendered-master-0a1b2c`,
    );
  });

  it('reruns when the machine networks change: they are its inputs', () => {
    expect(nodeIpHintStep.inputs(site(['10.42.0.0/24']))).not.toEqual(nodeIpHintStep.inputs(site(['10.43.0.0/24'])));
  });
});
