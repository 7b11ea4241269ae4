/**
 * Certificates from the CAs sites really have, proven against real TLS clients: for each CA type
 * (made by the openssl command line), the agent's domain and access steps run against a real
 * kube-apiserver; every certificate the domain step wrote passes `openssl verify` against the site's
 * root; a kube-apiserver then started with the API's certificate (--tls-sni-cert-key) and the client
 * CA the access step wrote (--client-ca-file) answers a TLS handshake for api.<cluster>.<domain>
 * that `openssl s_client -verify_return_error` and kubectl (trusting the site CA only) accept; and
 * the kubeconfig `sno-relocate credentials` made before the run is a cluster admin there.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_SECRET, APPS_SECRET } from '../../src/steps/domain/certificates.js';
import { CLIENT_CA_CONFIGMAP, CLIENT_CA_KEY } from '../../src/steps/access.js';
import { COMPONENT_ROUTES, CONFIG_NAMESPACE, ROUTER_NAMESPACE } from '../../src/kube/openshift.js';
import { FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import { runAgent, runAgentAsync, writeSiteFolder } from '../node/cli.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { intermediateCa, openssl, rootCa, type OpensslCa } from './openssl-cas.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const API_NAME = 'api.sno.store42.example.com';
const SECRETS = [
  {
    namespace: ROUTER_NAMESPACE,
    name: APPS_SECRET,
    host: 'canary-openshift-ingress-canary.apps.sno.store42.example.com',
  },
  ...COMPONENT_ROUTES.map((r) => ({
    namespace: CONFIG_NAMESPACE,
    name: r.secret,
    host: `${r.host}.apps.sno.store42.example.com`,
  })),
  { namespace: CONFIG_NAMESPACE, name: API_SECRET, host: API_NAME },
];

type Make = (dir: string, role: string) => OpensslCa;
const root =
  (kind: Parameters<typeof rootCa>[2]): Make =>
  (dir, role) =>
    rootCa(dir, `${role}-ca`, kind);
const MATRIX: [string, Make][] = [
  ['RSA 2048', root('rsa2048')],
  ['RSA 4096', root('rsa4096')],
  ['ECDSA P-256', root('p256')],
  ['ECDSA P-384', root('p384')],
  [
    'RSA root with an EC intermediate',
    (dir, role) => intermediateCa(dir, `${role}-issuing`, 'p256', rootCa(dir, `${role}-root`, 'rsa2048')),
  ],
];

describe.skipIf(kubeSkipped)('site and client CAs of every type, against real TLS clients', () => {
  let env: ClusterEnv;
  let work: string;
  beforeAll(async () => {
    env = await startFactory();
    work = mkdtempSync(path.join(tmpdir(), 'sno-relocate-real-tls-'));
  });
  afterAll(async () => {
    await env?.stop();
  });

  /**
   * What the kube-apiserver operator makes of the access and domain steps' objects
   * (cluster-kube-apiserver-operator observe_apiserver.go: spec.clientCA's ConfigMap merged into
   * --client-ca-file, each namedCertificate served for its names as --tls-sni-cert-key does),
   * reduced to the client CA and the API's certificate: a kube-apiserver restarted with them.
   */
  async function rollOut(dir: string): Promise<void> {
    const core = env.cluster.kubeConfig().makeApiClient(CoreV1Api);
    const cm = await core.readNamespacedConfigMap({ namespace: CONFIG_NAMESPACE, name: CLIENT_CA_CONFIGMAP });
    const secret = await core.readNamespacedSecret({ namespace: CONFIG_NAMESPACE, name: API_SECRET });
    const files = { clientCa: 'client-ca-file.crt', crt: 'api-tls.crt', key: 'api-tls.key' };
    writeFileSync(path.join(dir, files.clientCa), cm.data![CLIENT_CA_KEY]!);
    writeFileSync(path.join(dir, files.crt), Buffer.from(secret.data!['tls.crt']!, 'base64'));
    writeFileSync(path.join(dir, files.key), Buffer.from(secret.data!['tls.key']!, 'base64'));
    await env.cluster.restartApiServer({
      extraArgs: [
        `--client-ca-file=${path.join(dir, files.clientCa)}`,
        `--tls-sni-cert-key=${path.join(dir, files.crt)},${path.join(dir, files.key)}:${API_NAME}`,
      ],
    });
  }

  it.each(MATRIX)(
    '%s',
    async (label, make) => {
      const dir = path.join(work, label.replace(/\W+/g, '-'));
      mkdirSync(dir, { recursive: true });
      const siteCa = make(dir, 'site');
      const clientCa = make(dir, 'client');
      const site = writeSiteFolder(
        path.join(dir, 'site'),
        'store-0042',
        {
          baseDomain: 'store42.example.com',
          clusterName: 'sno',
          hostname: FACTORY_NODE_NAME,
          network: { nmstate: { interfaces: [] }, internalIP: '192.168.127.10/24' },
          access: { clientCAFile: 'client-ca.crt', siteCA: { certFile: 'site-ca.crt', keyFile: 'site-ca.key' } },
        },
        {
          'client-ca.crt': readFileSync(clientCa.crt, 'utf8'),
          'site-ca.crt': readFileSync(siteCa.crt, 'utf8'),
          'site-ca.key': readFileSync(siteCa.key, 'utf8'),
        },
      );
      const kubeconfig = path.join(dir, 'admin.kubeconfig');
      const made = runAgent(['credentials', '--site', site, '--key', clientCa.key, '--out', kubeconfig], {});
      expect(made.code, made.stderr).toBe(0);

      const stateRoot = mkdtempSync(path.join(dir, 'root-'));
      const run = await runAgentAsync(
        ['run', site, '--only', 'domain,access', '--root', stateRoot, '--kubeconfig', env.cluster.kubeconfigPath],
        {},
      );
      expect(run.code, run.stderr).toBe(0);

      // every certificate the domain step wrote verifies against the site's root, with the chain it is served with
      const core = env.cluster.kubeConfig().makeApiClient(CoreV1Api);
      for (const s of SECRETS) {
        const secret = await core.readNamespacedSecret({ namespace: s.namespace, name: s.name });
        const served = Buffer.from(secret.data!['tls.crt']!, 'base64').toString();
        const [leaf, ...chain] = served.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n/g)!;
        const leafFile = path.join(dir, `${s.name}.leaf.pem`);
        const chainFile = path.join(dir, `${s.name}.chain.pem`);
        writeFileSync(leafFile, leaf!);
        writeFileSync(chainFile, chain.join('') || leaf!);
        expect(
          openssl([
            'verify', '-CAfile', siteCa.root, '-untrusted', chainFile, '-purpose', 'sslserver', '-verify_hostname',
            s.host, leafFile,
          ]), // prettier-ignore
          `${s.namespace}/${s.name}`,
        ).toBe(`${leafFile}: OK\n`);
      }

      await env.models!.settled();
      await rollOut(dir);
      const { port } = new URL(env.cluster.server);

      // openssl's client, trusting the site's root only, asking for the API's name
      const handshake = spawnSync(
        'openssl',
        [
          's_client', '-connect', `127.0.0.1:${port}`, '-servername', API_NAME, '-CAfile', siteCa.root,
          '-verify_return_error', '-verify_hostname', API_NAME,
        ], // prettier-ignore
        { input: '', encoding: 'utf8', timeout: 30_000 },
      );
      expect(handshake.status, handshake.stderr).toBe(0);
      expect(handshake.stdout).toContain('Verify return code: 0 (ok)');

      // kubectl with the kubeconfig made before the run: it trusts the site CA only, and is a cluster admin
      const canI = execFileSync(
        'kubectl',
        [
          '--kubeconfig', kubeconfig, '--server', `https://127.0.0.1:${port}`, '--tls-server-name', API_NAME,
          'auth', 'can-i', '*', '*',
        ], // prettier-ignore
        { encoding: 'utf8', timeout: 30_000 },
      );
      expect(canI.trim()).toBe('yes');
    },
    300_000,
  );
});
