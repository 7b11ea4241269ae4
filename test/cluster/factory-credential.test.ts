/**
 * The factory's admin.kubeconfig at the site, on a real kube-apiserver: media laid out by the
 * installer (test/ibi/installer-media.ts) give the site's admin CA, and revoke the factory's CA as a
 * native site-config with spec.access.clientCAFile does, on a fresh node and on a node revoked at an
 * earlier move. A revoked CA comes back only when a site-config says `factoryAdminKubeconfig: keep`:
 * one that says nothing leaves it revoked. What the API server admits is the union the
 * kube-apiserver operator builds (apiserver-rollout.ts), so the factory's kubeconfig is tried for real.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_CA_CONFIGMAP, REVOKED_ANNOTATION } from '../../src/steps/access.js';
import { opensslCa } from '../helpers/openssl.js';
import { writeInstallerMedia } from '../ibi/installer-media.js';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { runAgentAsync, writeSiteFolder } from '../node/cli.js';
import { rollOutKubeApiServer } from './apiserver-rollout.js';
import { seedKubeadmin, startFactory, type ClusterEnv } from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const HASH = '$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy';
const REFUSED = "the factory's admin.kubeconfig is refused at this site";
const WORKS = "the factory's admin.kubeconfig is still a cluster admin at this site";

describe.skipIf(kubeSkipped)("the factory's admin kubeconfig, media and native site-configs", () => {
  let env: ClusterEnv;
  let work: string;
  let core: CoreV1Api;
  let factoryCa: string;
  beforeAll(async () => {
    env = await startFactory();
    work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-factory-credential-'));
    core = env.cluster.kubeConfig().makeApiClient(CoreV1Api);
    await seedKubeadmin(env, HASH);
    factoryCa = await adminCa().then((cm) => cm.data!['ca-bundle.crt']!);
  }, 120_000);
  afterAll(async () => {
    await env?.stop();
  });

  const adminCa = () => core.readNamespacedConfigMap({ namespace: 'openshift-config', name: ADMIN_CA_CONFIGMAP });

  /** `run --only access` on a node of its own (a fresh state folder), as each move is. */
  const relocate = async (folder: string) => {
    const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-factory-credential-root-'));
    const args = ['--only', 'access', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath];
    const plan = await runAgentAsync(['plan', folder, ...args], {});
    const run = await runAgentAsync(['run', folder, ...args], {});
    expect(run.code, run.stderr).toBe(0);
    return plan.stdout;
  };

  /** Installer-made media for a store: the hub generated its own admin CA for the site. */
  const media = (store: string) =>
    writeInstallerMedia(path.join(work, store), {
      clusterName: 'sno',
      baseDomain: `${store}.example.com`,
      hostname: FACTORY_NODE_NAME,
      pullSecret: { auths: { [`registry.${store}.example.com:5000`]: { auth: 'dTpw' } } },
      sshKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0dPb1uZ0d2H5oF4Jt2p0Q9m0cY3o3c8o7y9dJm3G8x ops@example.com',
      machineNetwork: '10.44.0.0/24',
      kubeadminPasswordHash: HASH,
    }).mediaDir;

  /** A native site folder; `access` as given, a client CA file when `clientCa` is. */
  const native = (name: string, access: Record<string, unknown>, clientCa?: { crt: string }) =>
    writeSiteFolder(
      path.join(work, name),
      name,
      {
        baseDomain: `${name}.example.com`,
        clusterName: 'sno',
        network: { nmstate: { interfaces: [] } },
        access: { ...access, ...(clientCa && { clientCAFile: 'admin-client-ca.crt' }) },
      },
      clientCa ? { 'admin-client-ca.crt': readFileSync(clientCa.crt, 'utf8') } : {},
    );

  /** The status code the API server gives the factory's admin.kubeconfig, once the operator has rolled out. */
  async function factoryLogin(): Promise<number | string> {
    await rollOutKubeApiServer(env.cluster, work);
    const kc = new KubeConfig();
    const { admin } = env.factory;
    kc.loadFromOptions({
      clusters: [
        { name: 'sno', server: env.cluster.server, caData: env.cluster.kubeConfig().getCurrentCluster()!.caData },
      ],
      users: [{ name: 'admin', certFile: admin.crt, keyFile: admin.key }],
      contexts: [{ name: 'admin', cluster: 'sno', user: 'admin' }],
      currentContext: 'admin',
    });
    return kc
      .makeApiClient(CoreV1Api)
      .listNamespace()
      .then(
        () => 200,
        (err: unknown) => (err instanceof ApiException ? err.code : String(err)),
      );
  }

  /** Whether the installer's admin CA is in the bundle the operator merges, and kept aside when not. */
  const revoked = async () => {
    const cm = await adminCa();
    return { bundle: cm.data?.['ca-bundle.crt'], keptAside: cm.metadata?.annotations?.[REVOKED_ANNOTATION] };
  };

  it("media on a fresh node revoke the factory's CA: the plan says so and the API server refuses it", async () => {
    expect(await factoryLogin()).toBe(200);
    const plan = await relocate(media('store-51'));
    expect(plan).toContain("revoke the factory's admin.kubeconfig");
    expect(plan).toContain(REFUSED);
    expect(await revoked()).toEqual({ bundle: '', keptAside: factoryCa });
    expect(await factoryLogin()).toBe(401);
  }, 180_000);

  it('media on a node revoked at an earlier move leave it revoked, never put back', async () => {
    // the earlier move: a native site-config with its own client CA (revoke by default)
    const earlier = opensslCa(work, 'store-52-admin-client-ca');
    await relocate(native('store-52', {}, earlier));
    expect(await revoked()).toEqual({ bundle: '', keptAside: factoryCa });
    const plan = await relocate(media('store-53'));
    expect(plan).toContain(REFUSED);
    expect(plan).not.toContain("restore the installer's admin CA");
    expect(await revoked()).toEqual({ bundle: '', keptAside: factoryCa });
    expect(await factoryLogin()).toBe(401);
  }, 180_000);

  it('a native site-config that says nothing leaves it revoked; only `keep` in so many words brings it back', async () => {
    // no client CA, no field: nothing to say about the factory's kubeconfig
    const silent = await relocate(native('store-54', { kubeadminPasswordHash: HASH }));
    expect(silent).toContain(REFUSED);
    // a client CA of its own and no field: the default is revoke
    const own = opensslCa(work, 'store-55-admin-client-ca');
    expect(await relocate(native('store-55', {}, own))).toContain(REFUSED);
    expect(await revoked()).toEqual({ bundle: '', keptAside: factoryCa });
    expect(await factoryLogin()).toBe(401);

    const keep = await relocate(native('store-56', { factoryAdminKubeconfig: 'keep' }, own));
    expect(keep).toContain("restore the installer's admin CA");
    expect(keep).toContain(WORKS);
    expect((await revoked()).bundle).toBe(factoryCa);
    expect(await factoryLogin()).toBe(200);
  }, 240_000);
});
