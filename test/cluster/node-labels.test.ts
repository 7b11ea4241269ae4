/**
 * The node-labels step on the real API: the site's labels land on this machine's Node beside the
 * installer's role labels; a second site-config without one of them takes away only that one, and
 * never a label someone else set.
 */
import { CoreV1Api, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNED_LABELS_ANNOTATION } from '../../src/steps/node-labels.js';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';

describe.skipIf(kubeSkipped)('node-labels on a real API', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    kc = env.cluster.kubeConfig();
  });
  afterAll(async () => {
    await env?.stop();
  });
  const labels = async () =>
    (await kc.makeApiClient(CoreV1Api).readNode({ name: FACTORY_NODE_NAME })).metadata?.labels ?? {};

  it("sets the site's labels, then removes only the ones it set that a later site-config leaves out", async () => {
    const first = await agent(
      env,
      storeSite({ nodeLabels: { 'store.example.com/id': '0042', 'store.example.com/zone': 'front' } }),
    );
    const planned = await first.plan(['node-labels']);
    expect(planned[0]).toMatchObject({ action: 'change' });
    expect((await first.run(['node-labels'])).result).toBe('succeeded');
    expect(await labels()).toEqual({
      'kubernetes.io/hostname': FACTORY_NODE_NAME,
      'node-role.kubernetes.io/master': '',
      'node-role.kubernetes.io/control-plane': '',
      'node-role.kubernetes.io/worker': '',
      'store.example.com/id': '0042',
      'store.example.com/zone': 'front',
    });

    // an administrator labels the node too
    await kc
      .makeApiClient(CoreV1Api)
      .patchNode(
        { name: FACTORY_NODE_NAME, body: { metadata: { labels: { 'ops.example.com/rack': 'r7' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    const second = await agent(env, storeSite({ nodeLabels: { 'store.example.com/id': '0043' } }));
    expect((await second.run(['node-labels'])).result).toBe('succeeded');
    const after = await labels();
    expect(after['store.example.com/id']).toBe('0043');
    expect(after).not.toHaveProperty('store.example.com/zone');
    expect(after['ops.example.com/rack']).toBe('r7');
    expect(after['node-role.kubernetes.io/master']).toBe('');
    const node = await kc.makeApiClient(CoreV1Api).readNode({ name: FACTORY_NODE_NAME });
    expect(node.metadata?.annotations?.[OWNED_LABELS_ANNOTATION]).toBe('store.example.com/id');

    // and a rerun has nothing to do
    expect((await second.plan(['node-labels']))[0]).toMatchObject({ action: 'noop' });
  });
});
