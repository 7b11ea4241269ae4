/**
 * The test ground's route.openshift.io, served through the real kube-aggregator by the tests'
 * aggregated server: the Kube port works on it as on the CRD, a missing route is a NotFound Status
 * naming it, and the aggregator answers 503 while the server is away and a bare 404 while a
 * restarted kube-apiserver has not registered the APIService yet. The Kube port rides out both.
 */
import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKube } from '../../src/kube/client.js';
import { isNotFound, isUnserved } from '../../src/kube/retry.js';
import type { KubeObject } from '../../src/ports/kube.js';
import { memoryLogger, startFactory, type ClusterEnv } from '../cluster/env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
type Route = KubeObject & { spec: { host: string } };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ROUTES = { group: 'route.openshift.io', version: 'v1', plural: 'routes' };

describe.skipIf(kubeSkipped)('route.openshift.io through API aggregation', () => {
  let env: ClusterEnv;
  beforeAll(async () => {
    env = await startFactory({ aggregatedRoutes: true, models: false });
  }, 180_000);
  afterAll(async () => {
    await env?.stop();
  });
  const raw = () => env.cluster.kubeConfig().makeApiClient(CustomObjectsApi);
  /** the ApiException `p` failed with (a test of a failure fails when there is none) */
  const failure = (p: Promise<unknown>): Promise<ApiException<unknown>> =>
    p.then(
      () => {
        throw new Error('expected a failure');
      },
      (err: unknown) => err as ApiException<unknown>,
    );

  it('serves the seeded routes, patches one, and names a missing one in a NotFound Status', async () => {
    const { log } = memoryLogger();
    const kube = createKube(env.cluster.kubeConfig(), log);
    const routes = await kube.list<Route>('route.openshift.io/v1', 'Route');
    expect(routes.length).toBe(env.factory.routes.length);
    const first = routes[0]!;
    const host = `moved.${first.spec.host}`;
    const patched = await kube.mergePatch<Route>(
      {
        apiVersion: 'route.openshift.io/v1',
        kind: 'Route',
        name: first.metadata.name,
        namespace: first.metadata.namespace,
      },
      { spec: { host } },
    );
    expect(patched.apiVersion).toBe('route.openshift.io/v1');
    expect(patched.spec.host).toBe(host);
    const missing = await failure(raw().getNamespacedCustomObject({ ...ROUTES, namespace: 'default', name: 'nope' }));
    expect(missing.code).toBe(404);
    expect(isNotFound(missing)).toBe(true);
    expect(
      await kube.get({ apiVersion: 'route.openshift.io/v1', kind: 'Route', namespace: 'default', name: 'nope' }),
    ).toBeUndefined();
  });

  it('answers 503 from the aggregator while the server is away; a read waits it out, logging its start and end', async () => {
    const { log, lines } = memoryLogger();
    const kube = createKube(env.cluster.kubeConfig(), log);
    const ref = { apiVersion: 'route.openshift.io/v1', kind: 'Route', namespace: 'default', name: 'nope' };
    expect(await kube.get(ref)).toBeUndefined();
    await env.routes!.stop();
    try {
      const away = await failure(raw().listCustomObjectForAllNamespaces(ROUTES));
      expect(away.code).toBe(503);
      const reading = kube.list('route.openshift.io/v1', 'Route');
      // the read met the outage: then the server comes back
      while (!lines.some((l) => l.includes('apiOutageStarted'))) await sleep(20);
      await env.routes!.start();
      expect((await reading).length).toBe(env.factory.routes.length);
    } finally {
      await env.routes!.start();
    }
    const journal = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 30);
    expect(journal.map((l) => l.msg)).toEqual([
      expect.stringMatching(/^the API is away \(HTTP 503: .*\) at list Route: retrying for up to 360 s$/),
      expect.stringMatching(/^the API answers again after \d+ s$/),
    ]);
  });

  it('answers a bare 404 for routes while a restarted kube-apiserver registers the APIService', async () => {
    const seen: number[] = [];
    let polling = true;
    // a request at a time until the restart is over: what the API answered for routes meanwhile
    const poll = (async () => {
      while (polling) {
        const answer = await raw()
          .listCustomObjectForAllNamespaces({ ...ROUTES, limit: 1 })
          .then(
            () => 200,
            (err: unknown) => err,
          );
        if (answer instanceof ApiException) {
          seen.push(answer.code);
          if (answer.code === 404) expect(isUnserved(answer)).toBe(true);
        } else seen.push(answer === 200 ? 200 : 0);
        await sleep(5);
      }
    })();
    await env.cluster.restartApiServer();
    while (seen.at(-1) !== 200) await sleep(20);
    polling = false;
    await poll;
    expect(seen).toContain(404);
  });
});
