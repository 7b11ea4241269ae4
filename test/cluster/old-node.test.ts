/**
 * The old-node step on the real API: the Node this machine registered in the factory goes once the
 * Node under its site hostname is Ready; a Node of another machine stays, whatever its name.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FACTORY_NODE_NAME, OTHER_NODE_NAME } from '../kube/factory-cluster.js';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const MACHINE_ID = '0f3c6a1e9b2d4c5f8a7e6d5c4b3a2910';
const NEW_NAME = 'store-0042-sno';

describe.skipIf(kubeSkipped)('old-node on a real API', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    kc = env.cluster.kubeConfig();
  });
  afterAll(async () => {
    await env?.stop();
  });
  const core = () => kc.makeApiClient(CoreV1Api);
  const setStatus = async (name: string, machineID: string, ready: boolean) => {
    await core().patchNodeStatus({
      name,
      body: [
        {
          op: 'add',
          path: '/status',
          value: {
            nodeInfo: {
              machineID,
              systemUUID: 'f00dfeed-0000-4000-8000-000000000001',
              bootID: 'b',
              kernelVersion: 'k',
              osImage: 'o',
              containerRuntimeVersion: 'c',
              kubeletVersion: 'v',
              kubeProxyVersion: 'v',
              operatingSystem: 'linux',
              architecture: 'amd64',
            },
            conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', reason: 'KubeletReady' }],
          },
        },
      ],
    });
  };
  const createNode = async (name: string) => {
    await core().createNode({ body: { metadata: { name } } as V1Node });
  };

  it("deletes only this machine's former Node, and only once the new Node is Ready", async () => {
    await setStatus(FACTORY_NODE_NAME, MACHINE_ID, false);
    await createNode(OTHER_NODE_NAME);
    await setStatus(OTHER_NODE_NAME, 'another-machine-id-00000000000000', false);
    await createNode(NEW_NAME);
    await setStatus(NEW_NAME, MACHINE_ID, false);

    const a = await agent(env, storeSite({ hostname: NEW_NAME }), undefined, undefined, { healthTimeoutSeconds: 2 });
    mkdirSync(path.join(a.root, 'etc'), { recursive: true });
    writeFileSync(path.join(a.root, 'etc/machine-id'), `${MACHINE_ID}\n`);

    const [plan] = await a.plan(['old-node']);
    expect(plan).toEqual({
      step: 'old-node',
      action: 'change',
      summary: `delete this machine's former Node once ${NEW_NAME} is Ready`,
      changes: [
        {
          action: 'delete',
          target: `Node ${FACTORY_NODE_NAME}`,
          summary: `same machine-id ${MACHINE_ID} as this machine; deleted after Node ${NEW_NAME} is Ready`,
        },
      ],
    });
    // the new Node is not Ready: the former one is kept, and the run says why
    await expect(a.run(['old-node'])).rejects.toThrow(
      `Node ${NEW_NAME} not Ready after 2s; the former Node is kept until it is`,
    );
    expect((await core().listNode()).items.map((n) => n.metadata!.name).sort()).toEqual(
      [NEW_NAME, OTHER_NODE_NAME, FACTORY_NODE_NAME].sort(),
    );

    await setStatus(NEW_NAME, MACHINE_ID, true);
    expect((await a.run(['old-node'])).result).toBe('succeeded');
    expect((await core().listNode()).items.map((n) => n.metadata!.name).sort()).toEqual(
      [NEW_NAME, OTHER_NODE_NAME].sort(),
    );
    expect((await a.plan(['old-node']))[0]).toMatchObject({ action: 'noop' });
  });
});
