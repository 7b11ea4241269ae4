/**
 * csr-approval as kubelet drives it: the client request first, the serving request only once the
 * client certificate is approved; and a bounded wait that ends with a clear error when kubelet
 * files nothing.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CertificatesV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCsr, kubeletCsrSpecs } from '../kube/csr-requests.js';
import { FACTORY_NODE_IP } from '../kube/factory-cluster.js';
import { KUBELET_ENV_FILE } from '../../src/node/node-name.js';
import { instantClock } from '../node/context.js';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';

describe.skipIf(kubeSkipped)('csr-approval against kubelet filing requests over time', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  beforeAll(async () => {
    env = await startFactory();
    kc = env.cluster.kubeConfig();
  });
  afterAll(async () => {
    await env?.stop();
  });

  const approved = async (name: string) =>
    (await kc.makeApiClient(CertificatesV1Api).readCertificateSigningRequest({ name })).status?.conditions?.some(
      (c) => c.type === 'Approved' && c.status === 'True',
    ) ?? false;

  it('approves the client request, then the serving request kubelet files after it, and nothing of another node', async () => {
    const node = 'sno-store77';
    const specs = kubeletCsrSpecs(node, FACTORY_NODE_IP, 'site');
    const client = await createCsr(kc, specs.client);
    const a = await agent(env, storeSite({ hostname: node }));
    // kubelet files its requests under the name it registers the Node as
    writeFileSync(path.join(a.root, KUBELET_ENV_FILE), `KUBELET_NODE_NAME=${node}\n`);
    const running = a.run(['csr-approval']);
    // kubelet: the serving request follows once the client certificate is approved
    let serving: string | undefined;
    for (let polls = 0; polls < 2000 && !serving; polls++) {
      if (await approved(client)) serving = await createCsr(kc, specs.serving);
      else await new Promise((resolve) => setImmediate(resolve));
    }
    expect(serving).toBeDefined();
    expect((await running).result).toBe('succeeded');
    expect(await approved(serving!)).toBe(true);
    const approvals = a.logs
      .map((l) => JSON.parse(l) as { msg: string })
      .filter((l) => / approved: /.test(l.msg))
      .map((l) => l.msg);
    expect(approvals).toEqual([
      expect.stringContaining(
        `CSR ${client} approved: client certificate for system:node:${node}, requested by the node-bootstrapper`,
      ),
      expect.stringContaining(`CSR ${serving} approved: serving certificate for ${node}, ${FACTORY_NODE_IP}`),
    ]);
    // the factory node's requests belong to another name now
    expect(await approved(env.factory.csrs.nodeClient!)).toBe(false);
    expect(await approved(env.factory.csrs.otherNodeClient!)).toBe(false);
  });

  it('gives up after its bound with a clear error when kubelet files nothing', async () => {
    const a = await agent(env, storeSite({ hostname: 'sno-silent' }));
    writeFileSync(path.join(a.root, KUBELET_ENV_FILE), 'KUBELET_NODE_NAME=sno-silent\n');
    a.ctx.clock = instantClock();
    await expect(a.run(['csr-approval'])).rejects.toThrow(
      'csr-approval: kubelet filed no client and serving request for node sno-silent within 15 min',
    );
  });
});
