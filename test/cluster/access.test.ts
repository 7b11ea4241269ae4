/**
 * Credentials made before shipment work at the site: `sno-relocate credentials` writes the site's
 * admin kubeconfig from the site folder and the client CA's key; the agent's run puts the client CA
 * and the kubeadmin hash in place on a real kube-apiserver; a model of the kube-apiserver operator
 * then rolls out a new API server with the client CAs upstream unites (the installer's admin CA
 * beside the site's); the kubeconfig made before the run is a cluster admin after it, and one
 * signed by another CA is refused. The installer's admin.kubeconfig is a cluster admin at the
 * factory, refused once the site revokes it (the default with a site client CA), admitted again
 * when the site keeps it.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { runAgent, runAgentAsync, writeSiteFolder } from '../node/cli.js';
import { rollOutKubeApiServer } from './apiserver-rollout.js';
import { seedKubeadmin, startFactory, type ClusterEnv } from './env.js';
import { opensslCa } from '../helpers/openssl.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const API_NAME = 'api.sno.store42.example.com';
/** bcrypt hashes (their passwords do not matter here: the OAuth server checks them, not the agent) */
const FACTORY_HASH = '$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy';
const SITE_HASH = '$2b$12$KIXQJ9u3x0H1lV3Y9Dq2vO7vK7m2bS5rM0b3hC2v1Qe0mJ8pTzq6W';

describe.skipIf(kubeSkipped)('site access on a real API', () => {
  let env: ClusterEnv;
  let work: string;
  beforeAll(async () => {
    env = await startFactory();
    work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-access-'));
    // the installer's kubeadmin secret, made with the cluster
    await seedKubeadmin(env, FACTORY_HASH);
  });
  afterAll(async () => {
    await env?.stop();
  });

  /** A site folder with spec.access; `clientCa` names which CA signs its administrators. */
  function siteFolder(
    name: string,
    clientCa: { crt: string },
    siteCa: { crt: string; key: string },
    factoryAdminKubeconfig?: 'keep' | 'revoke',
  ): string {
    return writeSiteFolder(
      path.join(work, name),
      'store-0042',
      {
        baseDomain: 'store42.example.com',
        clusterName: 'sno',
        hostname: FACTORY_NODE_NAME,
        network: { nmstate: { interfaces: [] }, internalIP: '192.168.127.10/24' },
        access: {
          clientCAFile: 'admin-client-ca.crt',
          kubeadminPasswordHash: SITE_HASH,
          siteCA: { certFile: 'site-ca.crt', keyFile: 'site-ca.key' },
          ...(factoryAdminKubeconfig && { factoryAdminKubeconfig }),
        },
      },
      {
        'admin-client-ca.crt': readFileSync(clientCa.crt, 'utf8'),
        'site-ca.crt': readFileSync(siteCa.crt, 'utf8'),
        'site-ca.key': readFileSync(siteCa.key, 'utf8'),
      },
    );
  }

  /** The kubeconfig as a laptop at the site uses it: api.<cluster>.<domain> reaches this API. */
  function atSite(file: string): CoreV1Api {
    const kc = new KubeConfig();
    kc.loadFromFile(file);
    const cluster = kc.getCurrentCluster()!;
    expect(cluster.server).toBe(`https://${API_NAME}:6443`);
    kc.clusters = [{ ...cluster, server: env.cluster.server, tlsServerName: API_NAME }];
    return kc.makeApiClient(CoreV1Api);
  }

  /** The installer's admin.kubeconfig, as the factory holds it: system:admin, signed by the installer's admin CA. */
  function factoryAdmin(): CoreV1Api {
    const kc = new KubeConfig();
    const { caData } = env.cluster.kubeConfig().getCurrentCluster()!;
    const { admin } = env.factory;
    kc.loadFromOptions({
      clusters: [{ name: 'sno', server: env.cluster.server, caData }],
      users: [
        {
          name: 'admin',
          certData: readFileSync(admin.crt).toString('base64'),
          keyData: readFileSync(admin.key).toString('base64'),
        },
      ],
      contexts: [{ name: 'admin', cluster: 'sno', user: 'admin' }],
      currentContext: 'admin',
    });
    return kc.makeApiClient(CoreV1Api);
  }

  const statusOf = async (call: Promise<unknown>) =>
    call.then(
      () => 200,
      (err: unknown) => (err instanceof ApiException ? err.code : String(err)),
    );

  it('makes the admin kubeconfig at the factory, and it is a cluster admin at the site after the run; another CA is refused', async () => {
    const clientCa = opensslCa(work, 'store42-admin-client-ca');
    const otherCa = opensslCa(work, 'someone-else-ca');
    const siteCa = opensslCa(work, 'store42-site-ca');
    const site = siteFolder('site', clientCa, siteCa);
    const stranger = siteFolder('stranger', otherCa, siteCa);

    const made = runAgent(
      [
        'credentials',
        '--site',
        site,
        '--key',
        clientCa.key,
        '--out',
        path.join(work, 'admin.kubeconfig'),
        '-o',
        'json',
      ],
      {},
    );
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ user: 'site-admin', server: `https://${API_NAME}:6443` });
    const wrong = runAgent(
      ['credentials', '--site', stranger, '--key', otherCa.key, '--out', path.join(work, 'stranger.kubeconfig')],
      {},
    );
    expect(wrong.code, wrong.stderr).toBe(0);
    // the key must belong to the site's client CA
    const mismatched = runAgent(
      ['credentials', '--site', site, '--key', otherCa.key, '--out', path.join(work, 'x.kubeconfig')],
      {},
    );
    expect(mismatched.code).toBe(2);
    expect(mismatched.stderr).toContain('is not the key of any certificate in spec.access.clientCAFile');

    // at the factory the installer's admin.kubeconfig is a cluster admin, and the site does not know its administrators
    await rollOutKubeApiServer(env.cluster, work);
    expect(await statusOf(factoryAdmin().listNamespacedSecret({ namespace: 'kube-system' }))).toBe(200);
    expect(await statusOf(atSite(path.join(work, 'admin.kubeconfig')).listNamespace())).not.toBe(200);
    const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-access-root-'));
    const plan = await runAgentAsync(
      ['plan', site, '--only', 'access', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath],
      {},
    );
    expect(plan.stdout).toContain("revoke the factory's admin.kubeconfig");
    expect(plan.stdout).toContain("the factory's admin.kubeconfig is refused at this site");
    const kubeadmin = await env.cluster
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace: 'kube-system', name: 'kubeadmin' });
    // asynchronously: the models of the operators must go on reconciling in this process meanwhile
    const run = await runAgentAsync(
      ['run', site, '--only', 'domain,access', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath],
      {},
    );
    expect(run.code, run.stderr).toBe(0);
    // the kube-apiserver operator's model first installs its revisions; this test then rolls out what
    // the model leaves out, the client CA and the named certificate, as the operator would
    await env.models!.settled();
    await rollOutKubeApiServer(env.cluster, work);

    // served with the site CA's certificate for its name, and the site's administrator is a cluster admin
    await expect(
      atSite(path.join(work, 'admin.kubeconfig')).listNamespacedSecret({ namespace: 'kube-system' }),
    ).resolves.toBeDefined();
    expect(await statusOf(atSite(path.join(work, 'stranger.kubeconfig')).listNamespace())).toBe(401);
    // revoked by default: the installer's admin CA left the client CAs, and status says so
    expect(await statusOf(factoryAdmin().listNamespace())).toBe(401);
    const status = runAgent(['status', '--root', root], {});
    expect(status.stdout).toContain('Factory admin kubeconfig: refused at this site');

    // the kubeadmin hash changed in place: the same object, so the OAuth server still accepts it
    const after = await env.cluster
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace: 'kube-system', name: 'kubeadmin' });
    expect(Buffer.from(after.data!.kubeadmin!, 'base64').toString()).toBe(SITE_HASH);
    expect(after.metadata!.uid).toBe(kubeadmin.metadata!.uid);
    expect(after.metadata!.creationTimestamp).toEqual(kubeadmin.metadata!.creationTimestamp);

    // a site that keeps the factory's kubeconfig: the installer's CA is back beside the site's, both admitted
    const keeping = siteFolder('site-keeps', clientCa, siteCa, 'keep');
    const kept = await runAgentAsync(
      ['run', keeping, '--only', 'access', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath],
      {},
    );
    expect(kept.code, kept.stderr).toBe(0);
    await rollOutKubeApiServer(env.cluster, work);
    expect(await statusOf(factoryAdmin().listNamespace())).toBe(200);
    expect(await statusOf(atSite(path.join(work, 'admin.kubeconfig')).listNamespace())).toBe(200);
    expect(runAgent(['status', '--root', root], {}).stdout).toContain(
      'Factory admin kubeconfig: still a cluster admin at this site',
    );
  }, 300_000); // two runs, the operator models' rollouts and API server restarts: ~65 s on an idle machine

  it('refuses (exit 3, nothing changed) a clientCA another tool set, and a kubeadmin secret that is gone', async () => {
    const kc = env.cluster.kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const ref = { group: 'config.openshift.io', version: 'v1', plural: 'apiservers', name: 'cluster' };
    const clientCa = opensslCa(work, 'store43-admin-client-ca');
    const site = siteFolder('site-43', clientCa, opensslCa(work, 'store43-site-ca'));
    const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-access-root-'));
    const run = () =>
      runAgentAsync(['run', site, '--only', 'access', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath], {});

    await custom.patchClusterCustomObject(
      { ...ref, body: { spec: { clientCA: { name: 'corporate-client-ca' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const foreign = await run();
    expect(foreign.code, foreign.stderr).toBe(3);
    expect(foreign.stderr).toContain('spec.clientCA names ConfigMap corporate-client-ca, which the agent did not make');

    await custom.patchClusterCustomObject(
      { ...ref, body: { spec: { clientCA: null } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await core.deleteNamespacedSecret({ namespace: 'kube-system', name: 'kubeadmin' });
    const gone = await run();
    expect(gone.code, gone.stderr).toBe(3);
    expect(gone.stderr).toContain('kube-system/kubeadmin does not exist');
    // refused before any change: the client CA is not installed either
    const cm = await core
      .readNamespacedConfigMap({ namespace: 'openshift-config', name: 'sno-relocate-admin-client-ca' })
      .then((c) => c.data?.['ca-bundle.crt']);
    expect(cm).not.toBe(readFileSync(clientCa.crt, 'utf8'));
    const secrets = await core.listNamespacedSecret({ namespace: 'kube-system' });
    expect(secrets.items.map((x) => x.metadata?.name)).not.toContain('kubeadmin');
  });
});
