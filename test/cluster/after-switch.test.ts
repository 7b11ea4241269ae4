/**
 * The cleanup after the switch, on a real API: a pod its ReplicaSet owns that failed to pull before
 * the switch is recreated, a bare pod in the same state is named with what to do and left, a pod
 * that pulls fine is not touched; pending certificate requests that are not this node's are named
 * in csr-approval's result (what `status` shows) and never approved.
 */
import { CoreV1Api, CertificatesV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const NS = 'shop-pull';

describe.skipIf(kubeSkipped)('after the switch on a real API', () => {
  let env: ClusterEnv;
  let core: CoreV1Api;
  beforeAll(async () => {
    env = await startFactory({ models: false });
    core = env.cluster.kubeConfig().makeApiClient(CoreV1Api);
  });
  afterAll(async () => {
    await env?.stop();
  });

  /** a pod whose container waits with `reason`, as kubelet reports it; owned by a ReplicaSet unless `bare` */
  const pod = async (name: string, reason: string | undefined, bare = false) => {
    const image = `registry.factory.example.com/shop/${name}:1`;
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: {
          name,
          ...(!bare && {
            ownerReferences: [
              {
                apiVersion: 'apps/v1',
                kind: 'ReplicaSet',
                name: `${name}-5d8f`,
                uid: '4b0c1e9e-0000-4000-8000-000000000001',
                controller: true,
              },
            ],
          }),
        },
        spec: { containers: [{ name: 'app', image }] },
      },
    });
    const state = reason
      ? { waiting: { reason, message: 'Back-off pulling image' } }
      : { running: { startedAt: new Date() } };
    await core.replaceNamespacedPodStatus({
      namespace: NS,
      name,
      body: {
        ...(await core.readNamespacedPod({ namespace: NS, name })),
        status: {
          phase: 'Pending',
          containerStatuses: [{ name: 'app', image, imageID: '', ready: false, restartCount: 0, state }],
        },
      },
    });
  };

  it('recreates the pods that failed to pull before the switch that a controller recreates, and names the rest', async () => {
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await pod('cart', 'ImagePullBackOff');
    await pod('search', 'ErrImagePull');
    await pod('front', undefined);
    await pod('debug', 'ImagePullBackOff', true);
    const a = await agent(env, storeSite());
    const state = await a.run(['image-pull-retry']);
    const left = (await core.listNamespacedPod({ namespace: NS })).items.map((p) => p.metadata!.name).sort();
    expect(left).toEqual(['debug', 'front']);
    expect(state.steps['image-pull-retry']?.plan).toEqual(['delete Pod shop-pull/cart', 'delete Pod shop-pull/search']);
    expect(state.steps['image-pull-retry']?.message).toBe(
      'recreate 2 pods that failed to pull before the switch; warning: pod shop-pull/debug cannot pull registry.factory.example.com/shop/debug:1 (ImagePullBackOff) and nothing recreates it: delete it to pull again',
    );
    // a rerun finds nothing a restart would help
    const rerun = await a.run(['image-pull-retry']);
    expect(rerun.steps['image-pull-retry']?.message).toMatch(/^no pod waits on a pull from before the switch/);
  });

  it("names the pending requests that are not this node's in the result status shows, and approves none of them", async () => {
    const a = await agent(env, storeSite());
    const [plan] = await a.plan(['csr-approval']);
    const other = env.factory.csrs.otherNodeClient!;
    expect(plan).toMatchObject({
      action: 'change',
      summary: expect.stringContaining(`; pending requests left alone (not approved): ${other} (`),
    });
    const csr = await env.cluster
      .kubeConfig()
      .makeApiClient(CertificatesV1Api)
      .readCertificateSigningRequest({ name: other });
    expect(csr.status?.conditions ?? []).toEqual([]);
  });
});
