/**
 * The node-name step on a factory node's root, with the hostname step through the test hostnamed:
 * the OS hostname becomes the site's while kubelet-env pins the Node to the name in kubelet's
 * client certificate (an openssl-made one, as kubelet's CSR gets signed); a MachineConfig that
 * declares kubelet-env, or a node with no name to keep, is refused before anything changes.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBus } from '../../test/dbus/bus.js';
import { FACTORY_HOSTNAME } from '../../test/fixtures/factory-node.js';
import { testNode, testSite } from '../../test/node/context.js';
import { opensslSelfSigned } from '../../test/helpers/openssl.js';
import { RefusedError } from '../base/errors.js';
import { planOf } from '../engine/engine.js';
import { KUBELET_CLIENT_CERT, KUBELET_ENV_FILE } from '../node/node-name.js';
import { CURRENT_CONFIG } from '../node/rendered-config.js';
import { hostnameStep } from './hostname.js';
import { type NodeNameView, nodeNameStep } from './node-name.js';

let bus: Awaited<ReturnType<typeof startTestBus>>;
beforeAll(async () => {
  bus = await startTestBus();
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
});
afterAll(() => bus?.stop());

const put = (root: string, file: string, content: string) => {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), content);
};

/** kubelet's client certificate and key in one file, as kubelet keeps them, for `name` */
function kubeletCertificate(root: string, name: string) {
  const dir = path.join(root, 'tmp-cert');
  mkdirSync(dir, { recursive: true });
  const { crt, key } = opensslSelfSigned(dir, 'kubelet', {
    subject: `/O=system:nodes/CN=system:node:${name}`,
    days: 1,
  });
  put(root, KUBELET_CLIENT_CERT, readFileSync(crt, 'utf8') + readFileSync(key, 'utf8'));
}

describe('node-name', () => {
  it('keeps the Node its certified name while the OS hostname becomes the site', async () => {
    const node = testNode({ site: testSite({ hostname: 'sno-store42' }), systemd: true });
    await bus.services.configure({ root: node.root });
    kubeletCertificate(node.root, 'sno-factory-0');
    put(node.root, KUBELET_ENV_FILE, 'KUBELET_PROVIDERID=baremetal://rack7\n');
    expect(await planOf(nodeNameStep, node.ctx)).toEqual({
      action: 'change',
      summary: "keep the Node's name sno-factory-0",
      changes: [
        {
          action: 'update',
          target: KUBELET_ENV_FILE,
          summary: 'kubelet registers under the name it has; the OS hostname is the site',
          diff: ['- KUBELET_NODE_NAME=', '+ KUBELET_NODE_NAME=sno-factory-0'],
        },
      ],
      decision: {
        nodeName: 'sno-factory-0',
        kubeletEnv: 'KUBELET_PROVIDERID=baremetal://rack7\nKUBELET_NODE_NAME=sno-factory-0\n',
      },
    });
    const state = await node.run([nodeNameStep, hostnameStep]);
    expect(state.result).toBe('succeeded');
    expect(readFileSync(path.join(node.root, KUBELET_ENV_FILE), 'utf8')).toBe(
      'KUBELET_PROVIDERID=baremetal://rack7\nKUBELET_NODE_NAME=sno-factory-0\n',
    );
    expect(readFileSync(path.join(node.root, 'etc/hostname'), 'utf8').trim()).toBe('sno-store42');
    // a second site: still the factory name, not the first site's hostname
    node.ctx.site = testSite({ hostname: 'sno-store43' });
    expect(await planOf(nodeNameStep, node.ctx)).toEqual({
      action: 'noop',
      reason: 'kubelet registers the Node as sno-factory-0',
    });
  });

  it('takes the factory hostname when kubelet holds no certificate yet', async () => {
    const node = testNode({ site: testSite({ hostname: 'sno-store42' }) });
    expect((await node.run([nodeNameStep])).result).toBe('succeeded');
    expect(readFileSync(path.join(node.root, KUBELET_ENV_FILE), 'utf8')).toBe(
      `KUBELET_NODE_NAME=${FACTORY_HOSTNAME}\n`,
    );
  });

  it('with spec.nodeName: rename, still pins the name the node has: node-rename renames it later', async () => {
    const node = testNode({ site: testSite({ hostname: 'sno-store42', nodeName: 'rename' }) });
    expect((await node.run([nodeNameStep])).result).toBe('succeeded');
    expect(readFileSync(path.join(node.root, KUBELET_ENV_FILE), 'utf8')).toBe(
      `KUBELET_NODE_NAME=${FACTORY_HOSTNAME}\n`,
    );
    // after the rename, kubelet-env names the new name, and that is the name kept
    put(node.root, KUBELET_ENV_FILE, 'KUBELET_NODE_NAME=sno-store42\n');
    expect(await planOf(nodeNameStep, node.ctx)).toEqual({
      action: 'noop',
      reason: 'kubelet registers the Node as sno-store42',
    });
  });

  it('refuses a node whose MachineConfig declares kubelet-env, writing nothing', async () => {
    const node = testNode({ site: testSite({ hostname: 'sno-store42' }) });
    const declared = `KUBELET_NODE_NAME=${FACTORY_HOSTNAME}-mc\n`;
    put(node.root, KUBELET_ENV_FILE, declared);
    put(
      node.root,
      CURRENT_CONFIG,
      JSON.stringify({
        metadata: { name: 'rendered-master-77' },
        spec: {
          config: {
            storage: {
              files: [
                { path: KUBELET_ENV_FILE, contents: { source: `data:,${encodeURIComponent('KUBELET_NODE_NAME=\n')}` } },
              ],
            },
          },
        },
      }),
    );
    expect(await planOf(nodeNameStep, node.ctx)).toMatchObject({
      action: 'conflict',
      reason: expect.stringContaining(
        `${KUBELET_ENV_FILE} is a file of the machine-config daemon's current config rendered-master-77`,
      ),
    });
    await expect(node.run([nodeNameStep])).rejects.toThrow(RefusedError);
    expect(readFileSync(path.join(node.root, KUBELET_ENV_FILE), 'utf8')).toBe(declared);
  });

  it('refuses a node with no name to keep', async () => {
    const node = testNode({ site: testSite({ hostname: 'sno-store42' }), factory: false });
    expect(await planOf(nodeNameStep, node.ctx)).toMatchObject({ action: 'conflict' });
    expect(existsSync(path.join(node.root, KUBELET_ENV_FILE))).toBe(false);
  });
});

describe('node-name decisions', () => {
  const declared = (content: string) => ({ name: 'rendered-master-77', files: new Map([[KUBELET_ENV_FILE, content]]) });
  it.each<[string, NodeNameView, string, unknown]>([
    ['pinned already', { kubeletEnv: 'KUBELET_NODE_NAME=sno-0\n', hostname: 'store42' }, 'noop', undefined],
    [
      'no kubelet-env: the certified name',
      { certified: 'sno-0', hostname: 'store42' },
      'change',
      { nodeName: 'sno-0', kubeletEnv: 'KUBELET_NODE_NAME=sno-0\n' },
    ],
    [
      'no certificate: the hostname, lower-cased, other lines kept',
      { kubeletEnv: 'KUBELET_PROVIDERID=x\n', hostname: 'SNO-Factory' },
      'change',
      { nodeName: 'sno-factory', kubeletEnv: 'KUBELET_PROVIDERID=x\nKUBELET_NODE_NAME=sno-factory\n' },
    ],
    [
      "kubelet-env's name wins over the certificate's",
      { kubeletEnv: 'KUBELET_NODE_NAME="sno-1"\n', certified: 'sno-0', hostname: 'x' },
      'change',
      { nodeName: 'sno-1', kubeletEnv: 'KUBELET_NODE_NAME=sno-1\n' },
    ],
    ['no name at all', { hostname: '' }, 'conflict', undefined],
    [
      'a MachineConfig declares kubelet-env otherwise',
      { certified: 'sno-0', hostname: 'x', declared: declared('KUBELET_NODE_NAME=\n') },
      'conflict',
      undefined,
    ],
    [
      'a MachineConfig declares the same kubelet-env',
      { certified: 'sno-0', hostname: 'x', declared: declared('KUBELET_NODE_NAME=sno-0\n') },
      'change',
      { nodeName: 'sno-0', kubeletEnv: 'KUBELET_NODE_NAME=sno-0\n' },
    ],
  ])('%s', (_, view, action, decision) => {
    const plan = nodeNameStep.plan(view, testSite({ hostname: 'store42' }));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
