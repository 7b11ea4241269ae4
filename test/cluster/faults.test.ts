/**
 * Faults in the cluster phase, on a real kube-apiserver: the API server restarts in the middle of
 * the run, and another writer races the agent on the cluster config singletons (409 Conflicts).
 * Either way the run completes (or a second run resumes it) with no duplicated entries and no
 * lost foreign ones.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/ports/kube.js';
import { FACTORY_APPS_DOMAIN, FOREIGN_CERT_SECRET } from '../kube/factory-cluster.js';
import { agent, startFactory, storeSite, type ClusterEnv, type LogEntry } from './env.js';

const NEW_APPS = 'apps.sno.store42.example.com';
type ApiServer = KubeObject & { spec: { servingCerts?: { namedCertificates?: { names?: string[]; servingCertificate: { name: string } }[] } } };
type Ingress = KubeObject & { spec: { appsDomain?: string; componentRoutes?: { namespace: string; name: string }[]; requiredHSTSPolicies?: { racer: number }[] } };
const APISERVER = { apiVersion: 'config.openshift.io/v1', kind: 'APIServer', name: 'cluster' };
const INGRESS = { apiVersion: 'config.openshift.io/v1', kind: 'Ingress', name: 'cluster' };

async function expectRelocated(env: ClusterEnv, extraForeign: string[] = []) {
  const a = await agent(env, storeSite());
  const apiserver = (await a.kube.get<ApiServer>(APISERVER))!;
  const secrets = apiserver.spec.servingCerts!.namedCertificates!.map((n) => n.servingCertificate.name);
  expect(secrets.filter((s) => s === FOREIGN_CERT_SECRET)).toHaveLength(1);
  for (const f of extraForeign) expect(secrets.filter((s) => s === f)).toHaveLength(1);
  expect(secrets.filter((s) => s.startsWith('sno-relocate-'))).toHaveLength(1);
  const ingress = (await a.kube.get<Ingress>(INGRESS))!;
  expect(ingress.spec.appsDomain).toBe(NEW_APPS);
  const keys = (ingress.spec.componentRoutes ?? []).map((c) => `${c.namespace}/${c.name}`);
  expect(new Set(keys).size).toBe(keys.length);
  const routes = await a.kube.list<KubeObject & { spec: { host: string } }>('route.openshift.io/v1', 'Route');
  expect(routes).toHaveLength(env.factory.routes.length);
  expect(routes.filter((r) => r.spec.host.endsWith(FACTORY_APPS_DOMAIN))).toEqual([]);
  expect((await a.kube.list('config.openshift.io/v1', 'ImageDigestMirrorSet')).map((o) => o.metadata.name)).toEqual(['sno-relocate-digest-mirrors']);
}

describe('an API server restart in the middle of the cluster phase', () => {
  let env: ClusterEnv;
  beforeAll(async () => {
    env = await startFactory({ seed: { extraRoutes: 300 } });
  }, 180_000);
  afterAll(async () => env?.stop());

  it('completes the run, or a rerun resumes it, with nothing duplicated or lost', async () => {
    let restart: Promise<void> | undefined;
    const a = await agent(env, storeSite(), undefined, (entry: LogEntry) => {
      // the routes step patches hundreds of routes: take the API away while it does
      if (!restart && entry.step === 'routes' && entry.event === 'stepStarted') restart = env.cluster.restartApiServer({ signal: 'SIGKILL' });
    });
    let result: string;
    try {
      result = (await a.run()).result;
    } catch {
      result = 'failed';
    }
    expect(restart).toBeDefined();
    await restart;
    if (result !== 'succeeded') result = (await a.run()).result;
    expect(result).toBe('succeeded');
    await expectRelocated(env);
    expect(a.logs.join('\n')).toMatch(/transient failure, retrying/);
  }, 240_000);
});

describe('a concurrent writer on apiserver.config and ingress.config', () => {
  let env: ClusterEnv;
  beforeAll(async () => {
    env = await startFactory({ seed: { csrs: true } });
  }, 180_000);
  afterAll(async () => env?.stop());

  it('keeps both writers\' changes: every 409 is answered by reading again', async () => {
    const racer = await agent(env, storeSite());
    let running = true;
    let writes = 0;
    const race = (async () => {
      while (running) {
        const n = ++writes;
        await racer.kube.update<ApiServer>(APISERVER, (cur) => {
          const named = cur.spec.servingCerts?.namedCertificates ?? [];
          return { ...cur, spec: { ...cur.spec, servingCerts: { namedCertificates: [...named.filter((x) => x.servingCertificate.name !== 'racer'), { names: [`racer-${n}.example.net`], servingCertificate: { name: 'racer' } }] } } };
        });
        await racer.kube.update<Ingress>(INGRESS, (cur) => ({ ...cur, spec: { ...cur.spec, requiredHSTSPolicies: [{ racer: n }] } }));
      }
    })();
    const a = await agent(env, storeSite());
    const state = await a.run(['domain', 'routes', 'mirrors']);
    running = false;
    await race;
    expect(state.result).toBe('succeeded');
    expect(writes).toBeGreaterThan(1);
    const apiserver = (await a.kube.get<ApiServer>(APISERVER))!;
    expect(apiserver.spec.servingCerts!.namedCertificates!.find((n) => n.servingCertificate.name === 'racer')?.names).toEqual([`racer-${writes}.example.net`]);
    const ingress = (await a.kube.get<Ingress>(INGRESS))!;
    expect(ingress.spec.requiredHSTSPolicies).toEqual([{ racer: writes }]);
    await expectRelocated(env, ['racer']);
  }, 180_000);
});
