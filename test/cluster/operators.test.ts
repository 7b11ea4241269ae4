/**
 * The cluster phase against the models of the OpenShift components that react to it
 * (test/cluster/models): the console and authentication operators' route sync, the ingress
 * operator's canary, the openshift-apiserver's generated hosts, the default router's admission and
 * the kube-apiserver operator's revisions, which restart the test API server.
 */
import { X509Certificate } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FACTORY_APPS_DOMAIN } from '../kube/factory-cluster.js';
import { agent, CLUSTER_PHASE, startFactory, storeSite, type ClusterEnv } from './env.js';
import { OPERAND_NAMESPACE } from './models/kube-apiserver-operator.js';
import type { RouteObject } from './models/loop.js';

const NEW_APPS = 'apps.sno.store42.example.com';
const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';

describe.skipIf(kubeSkipped)('cluster phase with the OpenShift operators at work', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  let root: string;
  beforeAll(async () => {
    env = await startFactory();
    kc = env.cluster.kubeConfig();
  });
  afterAll(async () => {
    await env?.stop();
  });

  const routes = async () =>
    (
      (await kc
        .makeApiClient(CustomObjectsApi)
        .listClusterCustomObject({ group: 'route.openshift.io', version: 'v1', plural: 'routes' })) as {
        items: RouteObject[];
      }
    ).items;
  /** the hosts the router serves: admitted status entries */
  const admitted = async () =>
    (await routes()).flatMap((r) =>
      (r.status?.ingress ?? [])
        .filter((i) => i.conditions?.some((c) => c.type === 'Admitted' && c.status === 'True'))
        .map((i) => i.host!),
    );

  it('moves console, downloads and OAuth through their operators: admitted on the new hosts, still there after the operators resync, nothing left to do', async () => {
    const a = await agent(env, storeSite(), undefined, undefined, { healthTimeoutSeconds: 120 });
    root = a.root;
    const before = await routes();
    const plans = await a.plan(CLUSTER_PHASE);
    const byStep = Object.fromEntries(plans.map((p) => [p.step, p]));
    // the plan names who moves the operators' routes; the routes step leaves them out
    const domainChanges = byStep.domain!.action === 'change' ? byStep.domain!.changes : [];
    expect(domainChanges.filter((c) => c.target.startsWith('Route '))).toEqual([
      expect.objectContaining({
        target: 'Route openshift-console/console',
        summary: expect.stringContaining('moved by console-operator'),
      }),
      expect.objectContaining({
        target: 'Route openshift-console/downloads',
        summary: expect.stringContaining('moved by console-operator'),
      }),
      expect.objectContaining({
        target: 'Route openshift-authentication/oauth-openshift',
        summary: expect.stringContaining('moved by authentication-operator'),
      }),
    ]);
    const routeTargets = byStep.routes!.action === 'change' ? byStep.routes!.changes.map((c) => c.target) : [];
    expect(routeTargets).toContain('Route openshift-monitoring/thanos-querier');
    expect(routeTargets.filter((t) => /openshift-(console|authentication|ingress-canary)\//.test(t))).toEqual([]);
    const state = await a.run(CLUSTER_PHASE);
    expect(state.result).toBe('succeeded');
    await env.models!.settled();
    expect(await admitted()).toEqual(
      expect.arrayContaining([
        `console-openshift-console.${NEW_APPS}`,
        `downloads-openshift-console.${NEW_APPS}`,
        `oauth-openshift.${NEW_APPS}`,
        `storefront-shop-app.${NEW_APPS}`,
      ]),
    );
    const after = await routes();
    const byName = (list: RouteObject[], ns: string, name: string) =>
      list.find((r) => r.metadata.namespace === ns && r.metadata.name === name);
    // the canary stays where its operator puts it, untouched: the same object, served on the factory domain
    expect(byName(after, 'openshift-ingress-canary', 'canary')!.metadata.resourceVersion).toBe(
      byName(before, 'openshift-ingress-canary', 'canary')!.metadata.resourceVersion,
    );
    expect(await admitted()).toContain(`canary-openshift-ingress-canary.${FACTORY_APPS_DOMAIN}`);
    // the console operator serves the new host from its own custom route; the default one stays
    expect(byName(after, 'openshift-console', 'console-custom')!.spec.host).toBe(
      `console-openshift-console.${NEW_APPS}`,
    );
    expect(byName(after, 'openshift-console', 'console')!.spec.host).toBe(
      `console-openshift-console.${FACTORY_APPS_DOMAIN}`,
    );
    // the router serves the agent's certificate, and the authentication operator is not degraded by it
    const ic = (await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'operator.openshift.io',
      version: 'v1',
      plural: 'ingresscontrollers',
      namespace: 'openshift-ingress-operator',
      name: 'default',
    })) as { spec: { defaultCertificate?: { name: string } } };
    expect(ic.spec.defaultCertificate).toEqual({ name: 'sno-relocate-apps-wildcard' });
    const routerCert = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace: 'openshift-ingress', name: 'sno-relocate-apps-wildcard' });
    const cert = new X509Certificate(Buffer.from(routerCert.data!['tls.crt']!, 'base64'));
    expect(cert.checkHost(`canary-openshift-ingress-canary.${FACTORY_APPS_DOMAIN}`)).toBeTruthy();
    expect(cert.checkHost(`storefront-shop-app.${NEW_APPS}`)).toBeTruthy();
    const authentication = (await kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'clusteroperators',
      name: 'authentication',
    })) as { status: { conditions: { type: string; status: string }[] } };
    expect(authentication.status.conditions).toContainEqual(
      expect.objectContaining({ type: 'Degraded', status: 'False' }),
    );
    const again = await (await agent(env, storeSite(), root)).plan(CLUSTER_PHASE);
    expect(again.filter((p) => p.action !== 'noop')).toEqual([]);
  }, 300_000);

  it('says done only once the kube-apiserver runs the revision that serves the new API name', async () => {
    const site = storeSite({ baseDomain: 'store77.example.com' });
    const a = await agent(env, site, root, undefined, { healthTimeoutSeconds: 120 });
    const state = await a.run([...CLUSTER_PHASE, 'health']);
    const installedAtDone = [...env.models!.kubeApiServer.installed];
    expect(state.result).toBe('succeeded');
    await env.models!.settled();
    const status = (await kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({
      group: 'operator.openshift.io',
      version: 'v1',
      plural: 'kubeapiservers',
      name: 'cluster',
    })) as { status: { latestAvailableRevision: number } };
    const latest = status.status.latestAvailableRevision;
    const config = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ namespace: OPERAND_NAMESPACE, name: `config-${latest}` });
    expect(config.data!['config.yaml']).toContain('api.sno.store77.example.com');
    expect(installedAtDone).toContain(latest);
  }, 300_000);

  it('refuses at plan time (exit 3) a named certificate the kube-apiserver operator would refuse, and writes nothing', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const apiservers = { group: 'config.openshift.io', version: 'v1', plural: 'apiservers', name: 'cluster' };
    const current = (await custom.getClusterCustomObject(apiservers)) as {
      spec: { servingCerts: { namedCertificates: object[] } };
    };
    const original = current.spec.servingCerts.namedCertificates;
    current.spec.servingCerts.namedCertificates = [
      ...original,
      { names: ['api.sno.store88.example.com'], servingCertificate: { name: 'someone-elses' } },
    ];
    await custom.replaceClusterCustomObject({ ...apiservers, body: current });
    const a = await agent(env, storeSite({ baseDomain: 'store88.example.com' }), root);
    await expect(a.run(CLUSTER_PHASE)).rejects.toMatchObject({
      exitCode: 3,
      message: expect.stringContaining(
        'the entry for secret someone-elses already names api.sno.store88.example.com, and the kube-apiserver operator refuses a name held by two entries',
      ),
    });
    const ingress = (await custom.getClusterCustomObject({ ...apiservers, plural: 'ingresses' })) as {
      spec: { appsDomain: string };
    };
    expect(ingress.spec.appsDomain).toBe('apps.sno.store77.example.com');
  });
});
