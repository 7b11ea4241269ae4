/**
 * Faults in the cluster phase: kube-apiserver restarting (and crashing) while the steps run, and
 * another writer racing the agent on apiserver.config and ingress.config.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FACTORY_APPS_DOMAIN, FOREIGN_CERT_NAMES, FOREIGN_CERT_SECRET } from '../kube/factory-cluster.js';
import { agent, startFactory, storeSite, type ClusterEnv, type LogEntry } from './env.js';

const cfg = { group: 'config.openshift.io', version: 'v1' };
type Ingress = { metadata: { resourceVersion: string }; spec: { appsDomain?: string; componentRoutes?: { namespace: string; name: string; hostname: string }[] } };
type APIServer = { metadata: { resourceVersion: string }; spec: { additionalCORSAllowedOrigins?: string[]; servingCerts?: { namedCertificates?: { names?: string[]; servingCertificate: { name: string } }[] } } };

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const statusOf = (err: unknown) => (err as { code?: number }).code;

describe.skipIf(kubeSkipped)('cluster phase under faults', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  beforeAll(async () => {
    env = await startFactory({ seed: { extraRoutes: 300 } });
    kc = env.cluster.kubeConfig();
  });
  afterAll(async () => {
    await env?.stop();
  });
  const custom = () => kc.makeApiClient(CustomObjectsApi);
  const ingress = async () => (await custom().getClusterCustomObject({ ...cfg, plural: 'ingresses', name: 'cluster' })) as Ingress;
  const apiserver = async () => (await custom().getClusterCustomObject({ ...cfg, plural: 'apiservers', name: 'cluster' })) as APIServer;
  const routeHosts = async () =>
    ((await custom().listClusterCustomObject({ group: 'route.openshift.io', version: 'v1', plural: 'routes' })) as { items: { spec: { host: string } }[] }).items.map((r) => r.spec.host);

  it('completes, or resumes on the next run, when kube-apiserver crashes during domain and restarts during routes: nothing lost or doubled', async () => {
    const restarts: Promise<void>[] = [];
    const site = storeSite();
    const a = await agent(env, site, undefined, (entry: LogEntry) => {
      if (entry.event !== 'stepStarted') return;
      if (entry.step === 'domain') restarts.push(env.cluster.restartApiServer({ signal: 'SIGKILL', downMs: 1_000 }));
      if (entry.step === 'routes') restarts.push(env.cluster.restartApiServer({ downMs: 500 }));
    });
    let result: string;
    try {
      result = (await a.run()).result;
    } catch {
      // a step may run out of patience while the API is down; the next boot runs again and resumes
      await Promise.all(restarts);
      result = (await (await agent(env, site, a.root)).run()).result;
    }
    await Promise.all(restarts);
    expect(restarts.length).toBe(2);
    expect(result).toBe('succeeded');
    // the API really went away under the agent, and the agent rode it out with retries
    expect(a.logs.join('\n')).toMatch(/transient failure, retrying/);

    const hosts = await routeHosts();
    expect(hosts.filter((h) => h.endsWith(`.${FACTORY_APPS_DOMAIN}`))).toEqual([]);
    expect(hosts.filter((h) => h.endsWith('.apps.sno.store42.example.com')).length).toBe(env.factory.oldDomainRoutes.length);
    expect((await apiserver()).spec.servingCerts?.namedCertificates).toEqual([
      { names: FOREIGN_CERT_NAMES, servingCertificate: { name: FOREIGN_CERT_SECRET } },
      { names: ['api.sno.store42.example.com'], servingCertificate: { name: 'sno-relocate-api' } },
    ]);
    expect((await ingress()).spec.componentRoutes?.map((r) => r.name)).toEqual(['console', 'downloads', 'oauth-openshift']);
  });

  it('keeps both writes when another writer races the agent on apiserver.config and ingress.config (409 Conflict)', async () => {
    const written = { origins: [] as string[], routes: [] as string[] };
    let stop = false;
    /** another operator: read, add one entry of its own, replace with the read resourceVersion */
    const writer = async () => {
      for (let i = 0; !stop; i++) {
        try {
          const a = await apiserver();
          const origin = `^https://writer-${i}\\.example\\.net$`;
          a.spec.additionalCORSAllowedOrigins = [...(a.spec.additionalCORSAllowedOrigins ?? []), origin];
          await custom().replaceClusterCustomObject({ ...cfg, plural: 'apiservers', name: 'cluster', body: a });
          written.origins.push(origin);
          const g = await ingress();
          const name = `writer-${i}`;
          g.spec.componentRoutes = [...(g.spec.componentRoutes ?? []), { namespace: 'store-tools', name, hostname: `${name}.store.example.net` }];
          await custom().replaceClusterCustomObject({ ...cfg, plural: 'ingresses', name: 'cluster', body: g });
          written.routes.push(name);
        } catch (err) {
          // the writer lost a race against the agent: it tries again, as a controller would
          if (statusOf(err) !== 409) throw err;
        }
      }
    };
    let conflicts = 0;
    let runs = 0;
    const writing = writer();
    try {
      // each run moves to another domain, so each changes both objects; repeated until the agent met a 409
      for (; runs < 8 && conflicts === 0; runs++) {
        const a = await agent(env, storeSite({ baseDomain: `race${runs}.example.com` }));
        expect((await a.run(['domain'])).result).toBe('succeeded');
        conflicts += a.logs.filter((l) => l.includes('changed while it was being updated')).length;
      }
    } finally {
      stop = true;
      await writing;
    }
    expect(conflicts).toBeGreaterThan(0);
    const last = `race${runs - 1}.example.com`;
    const a = await apiserver();
    const g = await ingress();
    // the writer's every write survived
    expect(a.spec.additionalCORSAllowedOrigins).toEqual(expect.arrayContaining(written.origins));
    expect(g.spec.componentRoutes?.map((r) => r.name)).toEqual(expect.arrayContaining(written.routes));
    // and so did the agent's, exactly once
    expect(a.spec.servingCerts?.namedCertificates).toEqual([
      { names: FOREIGN_CERT_NAMES, servingCertificate: { name: FOREIGN_CERT_SECRET } },
      { names: [`api.sno.${last}`], servingCertificate: { name: 'sno-relocate-api' } },
    ]);
    expect(g.spec.appsDomain).toBe(`apps.sno.${last}`);
    expect(g.spec.componentRoutes?.filter((r) => r.namespace !== 'store-tools')).toEqual([
      expect.objectContaining({ name: 'console', hostname: `console-openshift-console.apps.sno.${last}` }),
      expect.objectContaining({ name: 'downloads', hostname: `downloads-openshift-console.apps.sno.${last}` }),
      expect.objectContaining({ name: 'oauth-openshift', hostname: `oauth-openshift.apps.sno.${last}` }),
    ]);
  });
});
