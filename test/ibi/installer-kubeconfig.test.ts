/**
 * The image-based installer's admin kubeconfig works at the site, on a real kube-apiserver. Media
 * and kubeconfig are made the way the installer makes them (installer-media.ts); the agent runs the
 * cluster-identity, domain and access steps from that media; the kube-apiserver is then rolled out
 * as the kube-apiserver operator would with the result (spec.clientCA merged into --client-ca-file,
 * each namedCertificate served through --tls-sni-cert-key: cluster-kube-apiserver-operator
 * pkg/operator/configobservation/apiserver/observe_apiserver.go). Then:
 * - a TLS handshake for api.<cluster>.<domain> verifies with the kubeconfig's CA data as the only trust;
 * - the kubeconfig's client certificate is a cluster admin (`kubectl auth can-i '*' '*'`), and was
 *   not before the run;
 * - the router's certificate verifies against the same CA data (the installer's ingress signer);
 * - ClusterVersion spec.clusterID is the media's, the hub report carries it with the factory's
 *   infrastructure name and the media's differing infra_id, and no key of the media is in the
 *   report, the state folder or the agent's output;
 * - media naming another release registry is refused at plan (exit 3), naming both registries.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSiteConfig } from '../../src/config/load.js';
import { hubObserver, REPORT_API_VERSION, REPORT_KIND, REPORT_NAME, type ReportStatus } from '../../src/hub/report.js';
import { connectKube } from '../../src/kube/client.js';
import { createLogger } from '../../src/log/logger.js';
import { systemClock } from '../../src/ports/clock.js';
import { createRootFs } from '../../src/ports/fs.js';
import type { KubeObject } from '../../src/ports/kube.js';
import type { RunState } from '../../src/engine/state.js';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { runAgent, runAgentAsync } from '../node/cli.js';
import { rollOutKubeApiServer } from '../cluster/apiserver-rollout.js';
import { seedKubeadmin, startFactory, STATE_DIR, type ClusterEnv } from '../cluster/env.js';
import { type InstallerInput, type InstallerOutput, writeInstallerMedia } from './installer-media.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const API_NAME = 'api.sno.store44.example.com';
const FACTORY_INFRA = 'sno-factory-x7k2p';

const STORE: InstallerInput = {
  clusterName: 'sno',
  baseDomain: 'store44.example.com',
  hostname: FACTORY_NODE_NAME,
  pullSecret: { auths: { 'registry.store44.example.com:5000': { auth: Buffer.from('s44:token').toString('base64') } } },
  sshKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0dPb1uZ0d2H5oF4Jt2p0Q9m0cY3o3c8o7y9dJm3G8x ops@store44.example.com',
  machineNetwork: '10.44.0.0/24',
  releaseRegistry: 'quay.io',
  kubeadminPasswordHash: '$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy',
};

interface Kubeconfig {
  clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
}

describe.skipIf(kubeSkipped)("the installer's admin kubeconfig at the site, on a real API", () => {
  let env: ClusterEnv;
  let work: string;
  let media: InstallerOutput;
  let root: string;
  let runOutput = '';

  beforeAll(async () => {
    env = await startFactory();
    work = mkdtempSync(path.join(tmpdir(), 'ibi-kubeconfig-'));
    media = writeInstallerMedia(work, STORE);
    const kc = env.cluster.kubeConfig();
    await seedKubeadmin(env, '$2a$10$x');
    // the factory's Infrastructure, as the installer left it: its infrastructure name stays
    const custom = kc.makeApiClient(CustomObjectsApi);
    const ref = { group: 'config.openshift.io', version: 'v1', plural: 'infrastructures' };
    await custom.createClusterCustomObject({
      ...ref,
      body: {
        apiVersion: 'config.openshift.io/v1',
        kind: 'Infrastructure',
        metadata: { name: 'cluster' },
        spec: { platformSpec: { type: 'None' } },
      },
    });
    await custom.patchClusterCustomObjectStatus({
      ...ref,
      name: 'cluster',
      body: [{ op: 'add', path: '/status', value: { infrastructureName: FACTORY_INFRA } }],
    });
  });
  afterAll(async () => {
    await env?.stop();
  });

  /** The CA data of the installer's kubeconfig: the only trust of the site's tools. */
  const caData = () =>
    Buffer.from(
      (yaml.load(readFileSync(media.kubeconfigPath, 'utf8')) as Kubeconfig).clusters[0]!.cluster[
        'certificate-authority-data'
      ],
      'base64',
    ).toString();

  /** `kubectl auth can-i '*' '*'` with the installer's kubeconfig, reaching this API under the site's name. */
  function canI(): { code: number | null; out: string } {
    const server = new URL(env.cluster.server);
    const kubeconfig = yaml.load(readFileSync(media.kubeconfigPath, 'utf8')) as Kubeconfig;
    kubeconfig.clusters[0]!.cluster.server = `https://${API_NAME}:${server.port}`;
    const file = path.join(work, 'site.kubeconfig');
    writeFileSync(file, yaml.dump(kubeconfig), { mode: 0o600 });
    try {
      const out = execFileSync(
        'kubectl',
        [
          '--kubeconfig',
          file,
          '--server',
          env.cluster.server,
          '--tls-server-name',
          API_NAME,
          'auth',
          'can-i',
          '*',
          '*',
        ],
        { encoding: 'utf8', stdio: 'pipe' },
      );
      return { code: 0, out };
    } catch (err) {
      const e = err as { status: number | null; stdout: string; stderr: string };
      return { code: e.status, out: e.stdout + e.stderr };
    }
  }

  it('refuses at plan (exit 3) media naming another release registry, naming both', () => {
    const other = writeInstallerMedia(path.join(work, 'other-registry'), {
      ...STORE,
      releaseRegistry: 'registry.redhat.io',
    });
    const plan = runAgent(
      ['plan', other.mediaDir, '--only', 'cluster-identity', '--kubeconfig', env.cluster.kubeconfigPath],
      {},
    );
    expect(plan.code, plan.stderr).toBe(3);
    expect(plan.stdout + plan.stderr).toContain('release_registry registry.redhat.io is not quay.io');
    expect(plan.stdout + plan.stderr).toContain('imageDigestMirrors');
  });

  it('plans the new cluster ID and warns of the infra_id it does not apply', () => {
    const plan = runAgent(
      ['plan', media.mediaDir, '--only', 'cluster-identity', '--kubeconfig', env.cluster.kubeconfigPath, '-o', 'json'],
      {},
    );
    expect(plan.code, plan.stderr).toBe(0);
    const steps = (
      JSON.parse(plan.stdout) as { steps: { step: string; action: string; changes?: { diff?: string[] }[] }[] }
    ).steps;
    expect(steps[0]).toMatchObject({ step: 'cluster-identity', action: 'change' });
    expect(steps[0]!.changes![0]!.diff).toContain(`+ spec.clusterID: ${media.clusterId}`);
    // the signers that would re-sign every certificate: accepted, said to be unused
    expect(plan.stdout).toContain(
      'accepted, not used: localhost_signer_private_key, service_network_signer_private_key',
    );
    expect(plan.stderr).toContain(
      `infra_id ${media.infraId} differs from the cluster's infrastructure name ${FACTORY_INFRA}`,
    );
  });

  it("relocates from the media: the kubeconfig's CA verifies the API's site name, its client is a cluster admin", async () => {
    // before the run: the site does not know the installer's administrator
    expect(canI().code).not.toBe(0);
    root = mkdtempSync(path.join(tmpdir(), 'ibi-kubeconfig-root-'));
    const run = await runAgentAsync(
      [
        'run',
        media.mediaDir,
        '--only',
        'cluster-identity,domain,access',
        '--root',
        root,
        '--kubeconfig',
        env.cluster.kubeconfigPath,
        '--log-format',
        'json',
      ],
      {},
    );
    runOutput = run.stdout + run.stderr;
    expect(run.code, run.stderr).toBe(0);
    await env.models!.settled();
    await rollOutKubeApiServer(env.cluster, work);

    // TLS for api.<cluster>.<domain>, the kubeconfig's CA data the only trust
    const server = new URL(env.cluster.server);
    const peer = await new Promise<tls.PeerCertificate>((resolve, reject) => {
      const socket = tls.connect(
        { host: server.hostname, port: Number(server.port), servername: API_NAME, ca: caData() },
        () => {
          const cert = socket.getPeerCertificate();
          socket.end();
          resolve(cert);
        },
      );
      socket.on('error', reject);
    });
    expect(peer.subjectaltname).toContain(`DNS:${API_NAME}`);
    expect(peer.issuer).toMatchObject({ OU: 'openshift', CN: 'kube-apiserver-lb-signer' });

    const admin = canI();
    expect(admin, admin.out).toMatchObject({ code: 0 });
    expect(admin.out.trim()).toBe('yes');
  }, 300_000);

  it("serves the router's certificate under the installer's ingress signer, which the same CA data verifies", async () => {
    const secret = await env.cluster
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace: 'openshift-ingress', name: 'sno-relocate-apps-wildcard' });
    const leafPem = Buffer.from(secret.data!['tls.crt']!, 'base64').toString();
    const leaf = new X509Certificate(leafPem);
    expect(leaf.issuer).toBe(`CN=${media.signers.ingress.cert.subject.getField('CN').value as string}`);
    writeFileSync(path.join(work, 'bundle.crt'), caData());
    writeFileSync(path.join(work, 'router.crt'), leafPem);
    const verified = execFileSync(
      'openssl',
      ['verify', '-purpose', 'sslserver', '-CAfile', path.join(work, 'bundle.crt'), path.join(work, 'router.crt')],
      { encoding: 'utf8' },
    );
    expect(verified).toContain(': OK');
  });

  it('sets the cluster ID and reports it to the hub with the kept infrastructure name; no key anywhere', async () => {
    const version = (await env.cluster.kubeConfig().makeApiClient(CustomObjectsApi).getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'clusterversions',
      name: 'version',
    })) as {
      spec: { clusterID: string };
    };
    expect(version.spec.clusterID).toBe(media.clusterId);

    // the hub report as the run's observer publishes it once kubelet is up
    const loaded = await loadSiteConfig(media.mediaDir, new Date());
    const log = createLogger({ write: () => undefined, journal: false });
    const kube = await connectKube(env.cluster.kubeconfigPath, log);
    const now = new Date().toISOString();
    const state = {
      site: loaded.site.name,
      result: 'succeeded',
      startedAt: now,
      steps: { kubelet: { status: 'done', attempts: 1, startedAt: now } },
    } as unknown as RunState;
    await hubObserver(
      { fs: createRootFs(root), clock: systemClock, log, stateDir: STATE_DIR, imageBased: loaded.site.imageBased! },
      async () => kube,
    )(state);
    const report = (await kube.get({
      apiVersion: REPORT_API_VERSION,
      kind: REPORT_KIND,
      name: REPORT_NAME,
    })) as KubeObject & {
      status: ReportStatus;
    };
    expect(report.status).toMatchObject({
      clusterID: media.clusterId,
      infraID: FACTORY_INFRA,
      mediaInfraID: media.infraId,
      unusedFields: [
        'KubeconfigCryptoRetention.KubeAPICrypto.ServingCrypto.localhost_signer_private_key',
        'KubeconfigCryptoRetention.KubeAPICrypto.ServingCrypto.service_network_signer_private_key',
      ],
    });
    expect(report.status.warnings![0]).toContain(media.infraId);
    expect(report.status.warnings![0]).toContain(FACTORY_INFRA);

    // no key of the media in the report, the agent's output or any file of the state folder
    const stateFiles = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const p = path.join(dir, name);
        return statSync(p).isDirectory() ? stateFiles(p) : [readFileSync(p, 'utf8')];
      });
    const everything = [JSON.stringify(report), runOutput, ...stateFiles(path.join(root, STATE_DIR))].join('\n');
    for (const signer of Object.values(media.signers)) {
      const body = signer.keyPem.split('\n').filter((l) => l && !l.startsWith('-----'));
      for (const line of body) expect(everything).not.toContain(line);
    }
  });
});
