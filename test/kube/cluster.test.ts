/**
 * The real Kubernetes API test environment itself: etcd + kube-apiserver v1.20.2 start and stop, the
 * test CRDs install (also partially), the factory cluster seeds, the API server restarts with its
 * data intact, and nothing is left running.
 *
 * Its server is its own, not the worker's shared one (test/kube/pool.ts): the file tests how a
 * server starts and stops, by pid, with a user of its own in the token file.
 *
 * Needs scripts/ensure-kube-apiserver.sh to have run. Without the binary these tests fail, unless
 * SNO_RELOCATE_SKIP_KUBE=1, which skips them (and says so).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiException,
  CertificatesV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  VersionApi,
  type V1CertificateSigningRequest,
} from '@kubernetes/client-node';
import forge from 'node-forge';
import { missingBinaries, startCluster, type TestCluster } from './cluster.js';
import {
  KUBELET_CLIENT_SIGNER,
  KUBELET_CLIENT_USAGES,
  KUBELET_SERVING_SIGNER,
  KUBELET_SERVING_USAGES,
  NODE_BOOTSTRAPPER,
} from './csr-requests.js';
import { applyCrds, listCrds, selectCrds } from './install.js';
import {
  CUSTOM_HOSTS,
  FACTORY_APPS_DOMAIN,
  FACTORY_NODE_IP,
  FACTORY_NODE_NAME,
  FACTORY_OCP_VERSION,
  FOREIGN_CERT_NAMES,
  FOREIGN_CERT_SECRET,
  OTHER_NODE_NAME,
  seedFactoryCluster,
  type FactoryCluster,
} from './factory-cluster.js';

const missing = missingBinaries();
const skip = missing.length > 0 && process.env.SNO_RELOCATE_SKIP_KUBE === '1';
if (skip) console.warn(`SKIPPED: real kube-apiserver tests (SNO_RELOCATE_SKIP_KUBE=1): ${missing.join('; ')}`);

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (e) {
    if (e instanceof ApiException) return e.code;
    throw e;
  }
}

it.skipIf(skip)('finds kube-apiserver and etcd', () => {
  expect(missing, `${missing.join('\n')}\n(set SNO_RELOCATE_SKIP_KUBE=1 to skip these tests instead)`).toEqual([]);
});

describe.skipIf(skip)('real Kubernetes API (etcd + kube-apiserver v1.20.2)', () => {
  let cluster: TestCluster | undefined;
  let factory: FactoryCluster;
  const c = (): TestCluster => {
    if (!cluster) throw new Error('cluster did not start');
    return cluster;
  };

  beforeAll(async () => {
    if (missing.length > 0) {
      throw new Error(`${missing.join('\n')}\n(set SNO_RELOCATE_SKIP_KUBE=1 to skip these tests instead)`);
    }
    cluster = await startCluster({
      users: [{ name: 'viewer', groups: ['store-staff'] }],
      private: 'tests the start and stop of a server, by pid',
    });
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('serves v1.20.2 over verified TLS to the admin of the written kubeconfig', async () => {
    const kc = c().kubeConfig();
    expect(kc.getCurrentCluster()?.skipTLSVerify).toBeFalsy();
    const version = await kc.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toBe('v1.20.2');
    // kube-apiserver creates the default namespace a moment after it first answers: its bootstrap
    // controller (v1.20 pkg/master/controller.go, Controller.Start) does so in a goroutine of a
    // post-start hook. On a loaded machine that is after this line, so wait for it, bounded.
    const core = kc.makeApiClient(CoreV1Api);
    await expect
      .poll(async () => (await core.listNamespace()).items.map((n) => n.metadata?.name), { timeout: 30_000 })
      .toContain('default');
    // the certificate the kubeconfig trusts names the address served
    const leaf = execFileSync('openssl', ['x509', '-noout', '-checkip', '127.0.0.1', '-in', c().caPath], {
      encoding: 'utf8',
    });
    expect(leaf).toMatch(/does match certificate/);
    // an extra user is authenticated but not privileged: RBAC applies
    const viewer = new KubeConfig();
    viewer.loadFromFile(await c().kubeconfigFor('viewer'));
    expect(await status(viewer.makeApiClient(CoreV1Api).listNamespace())).toBe(403);
  });

  it('installs a subset of the test CRDs, then the rest, each established and served', async () => {
    const kc = c().kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const idms = { group: 'config.openshift.io', version: 'v1', plural: 'imagedigestmirrorsets' };

    const first = await applyCrds(c().kubeconfigPath, { except: ['mirrorSets', 'olm'] });
    expect(first.length).toBe(listCrds().length - 7);
    expect(await status(custom.listClusterCustomObject(idms))).toBe(404);
    expect(
      await status(
        custom.listCustomObjectForAllNamespaces({
          group: 'operators.coreos.com',
          version: 'v1alpha1',
          plural: 'subscriptions',
        }),
      ),
    ).toBe(404);

    const rest = await applyCrds(c().kubeconfigPath, { only: ['mirrorSets', 'olm'] });
    expect(rest.map((r) => r.kind).sort()).toEqual([
      'CatalogSource',
      'ClusterServiceVersion',
      'ImageDigestMirrorSet',
      'ImageTagMirrorSet',
      'InstallPlan',
      'OperatorGroup',
      'Subscription',
    ]);
    expect(await status(custom.listClusterCustomObject(idms))).toBe(200);
    // applying again replaces in place
    await applyCrds(c().kubeconfigPath, { only: ['routes'] });
    expect(() => selectCrds({ only: ['no-such-crd'] })).toThrow(/no test CRD matches/);
  });

  it('validates and prunes custom resources as a real server does', async () => {
    const custom = c().kubeConfig().makeApiClient(CustomObjectsApi);
    const route = (name: string, spec: object) => ({
      apiVersion: 'route.openshift.io/v1',
      kind: 'Route',
      metadata: { name, namespace: 'default' },
      spec,
    });
    const gvr = { group: 'route.openshift.io', version: 'v1', plural: 'routes', namespace: 'default' };
    // zero values ("", 0, false) are valid (the build fixes the Go >= 1.16 validator regression)
    await custom.createNamespacedCustomObject({
      ...gvr,
      body: route('zero', {
        host: 'zero.example.com',
        path: '/',
        to: { kind: 'Service', name: 's', weight: 0 },
        tls: { termination: 'edge', insecureEdgeTerminationPolicy: '' },
        wildcardPolicy: '',
      }),
    });
    // defaults are applied, unknown fields pruned
    const made = await custom.getNamespacedCustomObject({ ...gvr, name: 'zero' });
    expect(made.spec.to.weight).toBe(0);
    await custom.createNamespacedCustomObject({
      ...gvr,
      body: route('pruned', { host: 'p.example.com', to: { name: 's' }, bogus: 1 }),
    });
    const pruned = await custom.getNamespacedCustomObject({ ...gvr, name: 'pruned' });
    expect(pruned.spec.bogus).toBeUndefined();
    expect(pruned.spec.to).toEqual({ kind: 'Service', name: 's', weight: 100 });
    expect(pruned.spec.wildcardPolicy).toBe('None');
    // invalid objects are refused with 422
    expect(
      await status(
        custom.createNamespacedCustomObject({
          ...gvr,
          body: route('bad-host', { host: 'Not A Host!', to: { kind: 'Service', name: 's' } }),
        }),
      ),
    ).toBe(422);
    expect(
      await status(custom.createNamespacedCustomObject({ ...gvr, body: route('no-to', { host: 'x.example.com' }) })),
    ).toBe(422);
    const mcGvr = { group: 'machineconfiguration.openshift.io', version: 'v1', plural: 'machineconfigs' };
    const ignition = {
      ignition: { version: '3.2.0' },
      storage: { files: [{ path: '/etc/x', mode: 420, contents: { source: 'data:,x' } }] },
    };
    await custom.createClusterCustomObject({
      ...mcGvr,
      body: {
        apiVersion: 'machineconfiguration.openshift.io/v1',
        kind: 'MachineConfig',
        metadata: { name: '99-test' },
        spec: { config: ignition },
      },
    });
    const mc = await custom.getClusterCustomObject({ ...mcGvr, name: '99-test' });
    expect(mc.spec.config).toEqual(ignition);
    // status is a subresource: writes to the main resource leave it alone
    await custom.patchNamespacedCustomObjectStatus({
      ...gvr,
      name: 'pruned',
      body: [{ op: 'add', path: '/status', value: { ingress: [{ host: 'p.example.com', routerName: 'default' }] } }],
    });
    await custom.patchNamespacedCustomObject({
      ...gvr,
      name: 'pruned',
      body: [
        { op: 'replace', path: '/status', value: { ingress: [] } },
        { op: 'replace', path: '/spec/host', value: 'q.example.com' },
      ],
    });
    const after = await custom.getNamespacedCustomObject({ ...gvr, name: 'pruned' });
    expect(after.spec.host).toBe('q.example.com');
    expect(after.status.ingress[0].host).toBe('p.example.com');
    for (const name of ['zero', 'pruned']) await custom.deleteNamespacedCustomObject({ ...gvr, name });
    await custom.deleteClusterCustomObject({ ...mcGvr, name: '99-test' });
  });

  it('seeds the factory cluster', async () => {
    factory = await seedFactoryCluster(c().kubeconfigPath, { extraRoutes: 50 });
    expect(factory.skipped).toEqual([]);
    const kc = c().kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);

    const ingress = await custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'ingresses',
      name: 'cluster',
    });
    expect(ingress.spec.domain).toBe(FACTORY_APPS_DOMAIN);
    expect(ingress.status.componentRoutes.map((r: { name: string }) => r.name)).toEqual([
      'console',
      'downloads',
      'oauth-openshift',
    ]);
    const apiserver = await custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'apiservers',
      name: 'cluster',
    });
    expect(apiserver.spec.servingCerts.namedCertificates).toEqual([
      { names: FOREIGN_CERT_NAMES, servingCertificate: { name: FOREIGN_CERT_SECRET } },
    ]);
    const cv = await custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'clusterversions',
      name: 'version',
    });
    expect(cv.status.desired.version).toBe(FACTORY_OCP_VERSION);
    const icsp = await custom.listClusterCustomObject({
      group: 'operator.openshift.io',
      version: 'v1alpha1',
      plural: 'imagecontentsourcepolicies',
    });
    expect(icsp.items).toHaveLength(1);

    const all = await custom.listCustomObjectForAllNamespaces({
      group: 'route.openshift.io',
      version: 'v1',
      plural: 'routes',
    });
    expect(all.items).toHaveLength(factory.routes.length);
    expect(factory.routes.length).toBe(14 + 50);
    const console_ = await custom.getNamespacedCustomObject({
      group: 'route.openshift.io',
      version: 'v1',
      plural: 'routes',
      namespace: 'openshift-console',
      name: 'console',
    });
    expect(console_.spec.host).toBe(`console-openshift-console.${FACTORY_APPS_DOMAIN}`);
    expect(console_.status.ingress[0].host).toBe(console_.spec.host);
    expect(factory.customHostRoutes.map((r) => r.host).sort()).toEqual([...CUSTOM_HOSTS].sort());
    expect(new Set(factory.routes.filter((r) => r.name.startsWith('app-')).map((r) => r.namespace)).size).toBe(1);

    const ps = await core.readNamespacedSecret({ namespace: 'openshift-config', name: 'pull-secret' });
    expect(ps.type).toBe('kubernetes.io/dockerconfigjson');
    expect(JSON.parse(Buffer.from(ps.data!['.dockerconfigjson']!, 'base64').toString()).auths['quay.io']).toBeDefined();
    const node = await core.readNode({ name: FACTORY_NODE_NAME });
    expect(node.metadata?.labels?.['node-role.kubernetes.io/master']).toBe('');
  });

  it('has pending kubelet CSRs with real PKCS#10 requests, sent by the kubelet identities', async () => {
    const certs = c().kubeConfig().makeApiClient(CertificatesV1Api);
    const list = await certs.listCertificateSigningRequest();
    const byName = new Map(list.items.map((x) => [x.metadata!.name!, x]));
    const get = (name: string | undefined): V1CertificateSigningRequest => byName.get(name!)!;
    const parse = (csr: V1CertificateSigningRequest) => {
      const req = forge.pki.certificationRequestFromPem(Buffer.from(csr.spec.request, 'base64').toString());
      expect(req.verify()).toBe(true);
      return req;
    };
    expect(list.items).toHaveLength(3);
    for (const x of list.items) expect(x.status?.conditions ?? []).toEqual([]);

    const client = get(factory.csrs.nodeClient);
    expect(client.spec.signerName).toBe(KUBELET_CLIENT_SIGNER);
    expect(client.spec.usages).toEqual(KUBELET_CLIENT_USAGES);
    expect(client.spec.username).toBe(NODE_BOOTSTRAPPER);
    const clientReq = parse(client);
    expect(clientReq.subject.getField('CN').value).toBe(`system:node:${FACTORY_NODE_NAME}`);
    expect(clientReq.subject.getField('O').value).toBe('system:nodes');

    const serving = get(factory.csrs.nodeServing);
    expect(serving.spec.signerName).toBe(KUBELET_SERVING_SIGNER);
    expect(serving.spec.usages).toEqual(KUBELET_SERVING_USAGES);
    expect(serving.spec.username).toBe(`system:node:${FACTORY_NODE_NAME}`);
    expect(serving.spec.groups).toEqual(['system:nodes', 'system:authenticated']);
    const servingReq = parse(serving);
    const ext = servingReq.getAttribute({ name: 'extensionRequest' }) as unknown as {
      extensions: { name: string; altNames: { type: number; value?: string; ip?: string }[] }[];
    };
    const san = ext.extensions.find((e) => e.name === 'subjectAltName')!;
    expect(san.altNames.filter((a) => a.type === 2).map((a) => a.value)).toEqual([FACTORY_NODE_NAME]);
    expect(san.altNames.filter((a) => a.type === 7).map((a) => a.ip)).toEqual([FACTORY_NODE_IP]);
    // openssl reads the request too
    const pem = Buffer.from(serving.spec.request, 'base64').toString();
    expect(
      execFileSync('openssl', ['req', '-noout', '-verify', '-subject'], {
        input: pem,
        encoding: 'utf8',
        stdio: 'pipe',
      }),
    ).toContain(`system:node:${FACTORY_NODE_NAME}`);

    const other = get(factory.csrs.otherNodeClient);
    expect(parse(other).subject.getField('CN').value).toBe(`system:node:${OTHER_NODE_NAME}`);

    // approval works as the agent will do it (no signer runs here: the certificate stays empty)
    const approved = structuredClone(serving);
    approved.status = {
      conditions: [
        {
          type: 'Approved',
          status: 'True',
          reason: 'TestApprove',
          message: 'approved by test',
          lastUpdateTime: new Date(),
        },
      ],
    };
    await certs.replaceCertificateSigningRequestApproval({ name: serving.metadata!.name!, body: approved });
    const now = await certs.readCertificateSigningRequest({ name: serving.metadata!.name! });
    expect(now.status?.conditions?.[0]?.type).toBe('Approved');
  });

  it('restarts kube-apiserver on the same port against the same etcd, data intact', async () => {
    const before = c().pids();
    await c().restartApiServer({ signal: 'SIGKILL' });
    const after = c().pids();
    expect(after.apiServer).not.toBe(before.apiServer);
    expect(after.etcd).toBe(before.etcd);
    expect(alive(before.apiServer)).toBe(false);
    const custom = c().kubeConfig().makeApiClient(CustomObjectsApi);
    const ingress = await custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'ingresses',
      name: 'cluster',
    });
    expect(ingress.spec.domain).toBe(FACTORY_APPS_DOMAIN);
    const routes = await custom.listCustomObjectForAllNamespaces({
      group: 'route.openshift.io',
      version: 'v1',
      plural: 'routes',
    });
    expect(routes.items).toHaveLength(factory.routes.length);
  });

  it('stop() ends both processes and removes the folder', async () => {
    const { etcd, apiServer } = c().pids();
    expect(alive(etcd) && alive(apiServer)).toBe(true);
    await c().stop();
    expect(alive(etcd)).toBe(false);
    expect(alive(apiServer)).toBe(false);
    expect(existsSync(c().dir)).toBe(false);
    await c().stop(); // idempotent
  });
});
