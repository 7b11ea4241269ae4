/**
 * The domain step under a site CA that ends soon, on a real kube-apiserver: the site's PKI (an RSA
 * root made by `openssl ca` that ends in 60 days, an RSA issuing CA under it) signs the serving
 * certificates; each Secret's certificate ends with the root, not 825 days on, and the technician's
 * console gets a WARN naming the root, its end and what to do.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certificatesIn } from '../../src/base/pem.js';
import { datedCa, intermediateCa } from '../certs/openssl-cas.js';
import { agent, startFactory, storeSite, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const DAY_MS = 86_400_000;
const stamp = (days: number) => new Date(Date.now() + days * DAY_MS).toISOString().replace(/[-:T]|\.\d+/g, '');

describe.skipIf(kubeSkipped)('serving certificates under a site CA that ends in 60 days', () => {
  let env: ClusterEnv;
  beforeAll(async () => {
    env = await startFactory();
  }, 300_000);
  afterAll(async () => {
    await env?.stop();
  });

  it('end with the root, and the console is warned', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'issuer-end-'));
    const root = datedCa(dir, 'store42-root', stamp(-300), stamp(60));
    const issuing = intermediateCa(dir, 'store42-issuing', 'rsa2048', root);
    const rootEnd = Date.parse(certificatesIn(readFileSync(root.crt, 'utf8'))[0]!.validTo);
    const site = storeSite({
      access: { siteCa: { certPem: readFileSync(issuing.crt, 'utf8'), keyPem: readFileSync(issuing.key, 'utf8') } },
    });
    const a = await agent(env, site);
    const console: string[] = [];
    a.ctx.console = (line) => Promise.resolve(void console.push(line));
    expect((await a.run(['domain'])).result).toBe('succeeded');
    expect(console).toEqual([
      `WARN CN=store42-root expires on ${new Date(rootEnd).toISOString()}, in 59 days: the serving certificates it signs end then too; renew the site's CA and run the relocation again before then`,
    ]);
    // the named certificate rolls out a kube-apiserver revision: read once it has restarted
    await env.models!.settled();
    const core = env.cluster.kubeConfig().makeApiClient(CoreV1Api);
    const api = await core.readNamespacedSecret({ namespace: 'openshift-config', name: 'sno-relocate-api' });
    const leaf = certificatesIn(Buffer.from(api.data!['tls.crt']!, 'base64').toString())[0]!;
    expect(Date.parse(leaf.validTo)).toBe(rootEnd);
    expect(leaf.issuer).toBe('O=Store Corp\nCN=store42-issuing');
  }, 300_000);
});
