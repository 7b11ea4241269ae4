/**
 * The kube port's lists from the API server's watch cache (ListOptions.notOlderThan), on the real
 * kube-apiserver: a list at least as new as a write's resourceVersion holds that write, for a
 * custom kind and a core kind alike, and a version the cache has not reached is refused rather
 * than answered with older data.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKube } from '../../src/kube/client.js';
import type { KubeObject } from '../../src/ports/kube.js';
import { memoryLogger, startFactory, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';

type Route = KubeObject & { spec: { host: string } };
type ConfigMap = KubeObject & { data?: Record<string, string> };

describe.skipIf(kubeSkipped)('kube port: lists from the watch cache', () => {
  let env: ClusterEnv;
  beforeAll(async () => {
    env = await startFactory({ models: false });
  });
  afterAll(async () => {
    await env?.stop();
  });
  const kube = () => createKube(env.cluster.kubeConfig(), memoryLogger().log);

  it('holds a route patched just before, when asked for at least its version', async () => {
    const [first] = await kube().list<Route>('route.openshift.io/v1', 'Route', { notOlderThan: '0' });
    expect(first).toBeDefined();
    const host = `moved-${Date.now()}.apps.example.com`;
    const patched = await kube().mergePatch<Route>(
      {
        apiVersion: 'route.openshift.io/v1',
        kind: 'Route',
        namespace: first!.metadata.namespace,
        name: first!.metadata.name,
      },
      { spec: { host } },
    );
    const listed = await kube().list<Route>('route.openshift.io/v1', 'Route', {
      notOlderThan: patched.metadata.resourceVersion,
    });
    expect(
      listed.find((r) => r.metadata.name === first!.metadata.name && r.metadata.namespace === first!.metadata.namespace)
        ?.spec.host,
    ).toBe(host);
  });

  it('holds a ConfigMap written just before (a core kind, through the generic API)', async () => {
    const written = await kube().create<ConfigMap>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cached-list', namespace: 'default' },
      data: { at: 'now' },
    });
    const listed = await kube().list<ConfigMap>('v1', 'ConfigMap', {
      namespace: 'default',
      notOlderThan: written.metadata.resourceVersion,
    });
    expect(listed.map((c) => c.metadata.name)).toContain('cached-list');
    expect(listed.every((c) => c.kind === 'ConfigMap')).toBe(true);
  });

  it('refuses a version the cache has not reached rather than answer with older data', async () => {
    // one attempt: the API server's answer (504 after waiting 3 s) is transient and retried otherwise
    const once = createKube(env.cluster.kubeConfig(), memoryLogger().log, {
      retry: { budgetMs: 0, firstDelayMs: 0, maxDelayMs: 0 },
    });
    const [first] = await once.list<Route>('route.openshift.io/v1', 'Route');
    const ahead = (BigInt(first!.metadata.resourceVersion!) + 1_000_000n).toString();
    await expect(once.list('route.openshift.io/v1', 'Route', { notOlderThan: ahead })).rejects.toThrow(
      /too large resource version/i,
    );
    await expect(once.list('v1', 'ConfigMap', { notOlderThan: ahead })).rejects.toThrow(/too large resource version/i);
  });
});
