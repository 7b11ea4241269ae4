/**
 * The models' own implementations of what the agent also computes, and the agent's, against
 * vectors that upstream's code produced (the Go programs in upstream/, run with the Go toolchain).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_HASH_ANNOTATION, configMapHash } from '../../../src/kube/openshift-apiserver.js';
import { checkEndpoint } from '../../../src/kube/route-endpoints.js';
import { startDnsmasq, type RunningDnsmasq } from '../../helpers/dnsmasq.js';
import { configMapHashAnnotation, getConfigMapHash } from './resource-hash.js';
import { operatorGet } from './route-client.js';

const fixture = <T>(name: string) =>
  JSON.parse(readFileSync(new URL(`upstream/${name}`, import.meta.url), 'utf8')) as T;

describe("library-go's GetConfigMapHash (upstream/configmap-hash.go)", () => {
  const vectors = fixture<{ data: Record<string, string>; hash: string }[]>('configmap-hash.json');

  it.each(vectors.map((v) => [Object.keys(v.data).join(',') || 'no keys', v] as const))(
    'the model and the agent hash %s as Go does',
    (_, v) => {
      expect(getConfigMapHash(v.data)).toBe(v.hash);
      expect(configMapHash(v.data)).toBe(v.hash);
    },
  );

  it('annotates the openshift-apiserver template under the key the agent reads', () => {
    expect(configMapHashAnnotation('openshift-apiserver', 'config')).toBe(CONFIG_HASH_ANNOTATION);
  });
});

describe("the operators' TLS verification of a route (upstream/x509-verify.go, crypto/x509)", () => {
  const vectors =
    fixture<{ name: string; host: string; served: string; key: string; pool: string; error: string }[]>(
      'x509-verify.json',
    );
  let dns: RunningDnsmasq;

  beforeAll(async () => {
    const conf = mkdtempSync(path.join(tmpdir(), 'x509-dns-'));
    writeFileSync(path.join(conf, 'all.conf'), 'address=/example.com/127.0.0.1\n');
    dns = await startDnsmasq(conf);
  });
  afterAll(() => dns?.stop());

  /** What the model and the agent say of the route served with the vector's chain: undefined when it answers. */
  async function verdicts(v: (typeof vectors)[number]) {
    const server = https.createServer({ key: v.key, cert: v.served }, (_, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const url = `https://${v.host}/healthz`;
    try {
      const model = await operatorGet(url, v.pool, { nameservers: [dns.server], port }).then(
        (status) => (status === 200 ? undefined : `answered ${status}`),
        (e: Error) => e.message,
      );
      const agent = await checkEndpoint(
        { component: 'authentication', url, trusted: v.pool },
        { nameservers: [dns.server], port },
      );
      return { model, agent };
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }

  it.each(vectors.map((v) => [v.name, v.error || 'accepted', v] as const))(
    '%s: Go says %s, and so do the model and the agent',
    async (_, __, v) => {
      const { model, agent } = await verdicts(v);
      expect({ model: model === undefined, agent: agent === undefined }).toEqual({
        model: v.error === '',
        agent: v.error === '',
      });
    },
  );
});
