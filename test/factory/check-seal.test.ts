/**
 * `factory check` and `factory seal` against a real kube-apiserver and a node laid out under a
 * temporary root: prepared on the node, the machine-config daemon's files in place, the master
 * pool rendered with the agent's MachineConfigs. The check passes only when the node is fit to
 * ship; it reads real certificates (made by openssl and by the project's issuer, their dates read
 * back by openssl) from the node's files (kubelet's, kubeconfigs', the static pods' and etcd's) and
 * the cluster's TLS secrets, and sorts those expired on arrival by who renews them; a source it
 * cannot read (secrets the user may not list, a file that is not a certificate) fails the check by
 * name. Seal clears the factory run, closes the kubelet gate and records the shipment that `status`
 * shows.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApisApi, CoreV1Api, CustomObjectsApi, type KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { issue, newKey } from '../../src/certs/issue.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckReport } from '../../src/factory/check.js';
import { generateSigningKey } from '../../src/trust/signature.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { startTestBus } from '../dbus/bus.js';
import { runCli, WITHOUT_FILE_OVERRIDE } from '../helpers/cli.js';
import {
  applyMachineConfigs,
  INSTALL_ADDRESS,
  netnsAvailable,
  runCliAsync,
  runOnNode,
  seedRelocatable,
  settleMasterPool,
} from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const STATE = 'var/lib/sno-relocate';
const DAY_MS = 86_400_000;
/** a user of the API server who may read everything but secrets */
const NO_SECRETS = 'factory-no-secrets';
const RESOURCES = 'etc/kubernetes/static-pod-resources';
const KAS_LOCALHOST = `/${RESOURCES}/kube-apiserver-certs/secrets/localhost-serving-cert-certkey/tls.crt`;
const ETCD_PEER = `/${RESOURCES}/etcd-certs/secrets/etcd-all-certs/etcd-peer-sno-factory.crt`;

/** A certificate from the project's issuer, issued `ageDays` ago for `days`. */
const issued = (cn: string, days: number, ageDays = 0, client = false): Promise<string> =>
  issue({ commonName: cn, client, notBefore: new Date(Date.now() - ageDays * DAY_MS), validityDays: days }, newKey());

/** A kubeconfig whose user carries its client certificate as data, as kubelet's and the bootstrap one do. */
const kubeconfigWith = (user: string, pem: string): string =>
  yaml.dump({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster: { server: 'https://localhost:6443' } }],
    users: [{ name: user, user: { 'client-certificate-data': Buffer.from(pem).toString('base64') } }],
    contexts: [{ name: user, context: { cluster: 'local', user } }],
    'current-context': user,
  });

/** RBAC for `user`: get, list and watch every resource the server serves but secrets. */
async function everythingButSecrets(kc: KubeConfig, user: string): Promise<void> {
  const core = await kc.makeApiClient(CoreV1Api).getAPIResources();
  const groups = await kc.makeApiClient(ApisApi).getAPIVersions();
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const verbs = ['get', 'list', 'watch'];
  await rbac.createClusterRole({
    body: {
      metadata: { name: user },
      rules: [
        { apiGroups: [''], resources: core.resources.map((r) => r.name).filter((n) => n !== 'secrets'), verbs },
        { apiGroups: groups.groups.map((g) => g.name), resources: ['*'], verbs },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: user },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: user },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    },
  });
}

/** A self-signed certificate from openssl valid for `days`, as PEM. */
function opensslCert(dir: string, cn: string, days: number): string {
  const crt = path.join(dir, `${cn}.crt`);
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', String(days),
    '-subj', `/CN=${cn}`, '-keyout', path.join(dir, `${cn}.key`), '-out', crt,
  ], { stdio: 'pipe' }); // prettier-ignore
  return readFileSync(crt, 'utf8');
}

/** notAfter as openssl reads it, as an ISO date */
const opensslNotAfter = (pem: string): string =>
  new Date(
    execFileSync('openssl', ['x509', '-noout', '-enddate'], { input: pem, encoding: 'utf8' }).replace('notAfter=', ''),
  ).toISOString();

describe.skipIf(kubeSkipped || !netnsAvailable)('factory check and seal', () => {
  let env: ClusterEnv;
  let root: string;
  let kubeletCert: string;
  const certs = mkdtempSync(path.join(tmpdir(), 'factory-certs-'));
  const cli = (args: string[], prefix?: readonly string[]) =>
    runCli([...args, '--root', root, '--kubeconfig', env.cluster.kubeconfigPath], { timeoutMs: 120_000, prefix });
  const check = (days: number, prefix?: readonly string[]) =>
    cli(['factory', 'check', '--shelf-days', String(days)], prefix);
  const lineOf = (stdout: string, name: string) => stdout.split('\n').find((l) => l.includes(` ${name}: `));
  /** a JSON patch of a config.openshift.io object's status, as its operator writes it */
  const patchConfigStatus = (plural: string, name: string, body: object[]) =>
    env.cluster
      .kubeConfig()
      .makeApiClient(CustomObjectsApi)
      .patchClusterCustomObjectStatus({ group: 'config.openshift.io', version: 'v1', plural, name, body });

  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false }, users: [{ name: NO_SECRETS }] });
    const kc = env.cluster.kubeConfig();
    await seedRelocatable(kc);
    root = mkdtempSync(path.join(tmpdir(), 'factory-check-'));
    const prepared = await runOnNode(
      ['factory', 'prepare', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath],
      {
        server: env.cluster.server,
        addresses: [INSTALL_ADDRESS],
      },
    );
    if (prepared.code !== 0) throw new Error(`factory prepare failed: ${prepared.stderr}`);
    // the reboot into the rendered config: the daemon's files, the installer's executable, the pool
    await applyMachineConfigs(kc, root);
    mkdirSync(path.join(root, 'usr/local/bin'), { recursive: true });
    writeFileSync(path.join(root, 'usr/local/bin/sno-relocate'), '#!/bin/sh\n');
    chmodSync(path.join(root, 'usr/local/bin/sno-relocate'), 0o755);
    await settleMasterPool(kc);
    // certificates: kubelet's (30 days), a kube-apiserver one (30 days), a store application's (45 days)
    kubeletCert = opensslCert(certs, 'system:node:sno-factory', 30);
    mkdirSync(path.join(root, 'var/lib/kubelet/pki'), { recursive: true });
    writeFileSync(path.join(root, 'var/lib/kubelet/pki/kubelet-client-current.pem'), kubeletCert);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'openshift-kube-apiserver' } } });
    const tls = (namespace: string, name: string, pem: string) =>
      core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name, namespace },
          type: 'kubernetes.io/tls',
          data: { 'tls.crt': Buffer.from(pem).toString('base64'), 'tls.key': Buffer.from('unused').toString('base64') },
        },
      });
    await tls('openshift-kube-apiserver', 'kubelet-client', opensslCert(certs, 'system:kube-apiserver', 30));
    await tls('shop-app', 'storefront-tls', opensslCert(certs, 'shop.example.net', 45));
    // the node's other certificate files: the kube-apiserver's copy of a 30-day secret, etcd's
    // peer certificate (3 years), kubelet's kubeconfig (its client certificate embedded) and the
    // bootstrap kubeconfig (10 years, issued at installation a month ago)
    const put = (file: string, text: string) => {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), text);
    };
    put(KAS_LOCALHOST, await issued('localhost-serving', 30));
    put(ETCD_PEER, await issued('system:etcd-peer:sno-factory', 3 * 365));
    // beside them what is no certificate: a key, and a file where the walk meets folders elsewhere
    put(ETCD_PEER.replace(/\.crt$/, '.key'), 'key\n');
    put(`/${RESOURCES}/kube-apiserver-pod-3/secrets/encryption-config`, '{}\n');
    put(
      '/var/lib/kubelet/kubeconfig',
      kubeconfigWith('default-auth', await issued('system:node:sno-factory', 30, 0, true)),
    );
    put(
      '/etc/kubernetes/kubeconfig',
      kubeconfigWith(
        'kubelet',
        await issued('system:serviceaccount:openshift-machine-config-operator:node-bootstrapper', 3650, 30, true),
      ),
    );
    await everythingButSecrets(kc, NO_SECRETS);
  }, 240_000);
  afterAll(async () => env?.stop());

  it('passes a prepared node for 20 days on the shelf, warning loudly that no trust anchor is installed', () => {
    const r = check(20);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    for (const name of ['watcher', 'cluster operators', 'machine config pool', 'agent units', 'kubelet gate'])
      expect(lineOf(r.stdout, name), name).toMatch(/^ok /);
    expect(lineOf(r.stdout, 'trust anchors')).toMatch(
      /^WARNING trust anchors: NO TRUST ANCHOR under \/etc\/sno-relocate\/trust/,
    );
    expect(r.stdout).not.toContain('Certificates expired on arrival');
    expect(r.stdout.trimEnd().endsWith('fit to ship')).toBe(true);
  });

  it('for 60 days on the shelf: sorts what expires by who renews it, and fails on what nobody renews', () => {
    const r = cli(['factory', 'check', '--shelf-days', '60', '-o', 'json']);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as CheckReport;
    expect(report.fit).toBe(false);
    const fate = (source: string) => report.certificates.find((c) => c.source === source);
    expect(fate('/var/lib/kubelet/pki/kubelet-client-current.pem')).toMatchObject({
      expiredOnArrival: true,
      fate: 'agent approves renewal',
      notAfter: opensslNotAfter(kubeletCert),
    });
    expect(fate('Secret openshift-kube-apiserver/kubelet-client')?.fate).toBe('regenerated at start');
    expect(fate('Secret shop-app/storefront-tls')?.fate).toBe('needs a person');
    expect(fate(KAS_LOCALHOST)).toMatchObject({ fate: 'regenerated at start', subject: 'CN=localhost-serving' });
    expect(fate('/var/lib/kubelet/kubeconfig (user default-auth)')?.fate).toBe('agent approves renewal');
    expect(fate(ETCD_PEER)?.fate).toBe('valid');
    expect(fate('/etc/kubernetes/kubeconfig (user kubelet)')?.fate).toBe('valid');
    expect(report.unreadable).toEqual([]);
    // the seeded foreign certificate is valid for a year
    expect(fate('Secret openshift-config/foreign-cert')?.fate).toBe('valid');
    const text = check(60).stdout;
    expect(lineOf(text, 'certificates')).toMatch(
      /^FAIL {4}certificates: 1 certificate\(s\) expire within 60 days and nothing renews them: Secret shop-app\/storefront-tls/,
    );
    expect(text).toMatch(/agent approves renewal\s+\/var\/lib\/kubelet\/pki\/kubelet-client-current\.pem/);
    expect(text).toContain('NOT fit to ship');
  });

  it("for ten years on the shelf: etcd's certificates and kubelet's bootstrap credential need a person", () => {
    const r = cli(['factory', 'check', '--shelf-days', '3650', '-o', 'json']);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as CheckReport;
    const fate = (source: string) => report.certificates.find((c) => c.source === source);
    const etcd = readFileSync(path.join(root, ETCD_PEER), 'utf8');
    expect(fate(ETCD_PEER)).toMatchObject({ fate: 'needs a person', notAfter: opensslNotAfter(etcd) });
    const bootstrap = yaml.load(readFileSync(path.join(root, 'etc/kubernetes/kubeconfig'), 'utf8')) as {
      users: { user: { 'client-certificate-data': string } }[];
    };
    expect(fate('/etc/kubernetes/kubeconfig (user kubelet)')).toMatchObject({
      fate: 'needs a person',
      subject: 'CN=system:serviceaccount:openshift-machine-config-operator:node-bootstrapper',
      notAfter: opensslNotAfter(Buffer.from(bootstrap.users[0]!.user['client-certificate-data'], 'base64').toString()),
    });
  });

  it('a user who may not list secrets: the check says it could not look, and the node is not fit', async () => {
    const r = runCli(['factory', 'check', '--shelf-days', '20', '--root', root, '--kubeconfig', await env.cluster.kubeconfigFor(NO_SECRETS)], {
      timeoutMs: 120_000,
    }); // prettier-ignore
    expect(r.code).toBe(1);
    for (const name of ['watcher', 'cluster operators', 'machine config pool'])
      expect(lineOf(r.stdout, name), name).toMatch(/^ok /);
    expect(lineOf(r.stdout, 'certificates')).toMatch(
      /^FAIL {4}certificates: 1 source\(s\) could not be read, so what they hold is not known: the cluster's TLS secrets: cannot be listed \(.*forbidden.*\)$/,
    );
    expect(r.stdout).toContain('NOT fit to ship');
  });

  it('a certificate file that cannot be read or is not a certificate fails the check by name', () => {
    const server = path.join(root, 'var/lib/kubelet/pki/kubelet-server-current.pem');
    const etcd = path.join(root, ETCD_PEER);
    const good = readFileSync(etcd, 'utf8');
    // mode 000, and the check run by root without the capabilities that read any file anyway
    writeFileSync(server, good, { mode: 0o000 });
    writeFileSync(etcd, 'not a certificate\n');
    try {
      const r = check(20, WITHOUT_FILE_OVERRIDE);
      expect(r.code).toBe(1);
      const line = lineOf(r.stdout, 'certificates')!;
      expect(line).toMatch(/^FAIL {4}certificates: 2 source\(s\) could not be read/);
      expect(line).toContain('/var/lib/kubelet/pki/kubelet-server-current.pem: cannot be read (EACCES');
      expect(line).toContain(`${ETCD_PEER}: not a readable certificate (Invalid PEM formatted message.)`);
      const json = JSON.parse(
        cli(['factory', 'check', '--shelf-days', '20', '-o', 'json'], WITHOUT_FILE_OVERRIDE).stdout,
      ) as CheckReport;
      expect(json.fit).toBe(false);
      expect(json.unreadable).toHaveLength(2);
    } finally {
      rmSync(server);
      writeFileSync(etcd, good);
    }
  });

  it('fails while a ClusterOperator is Degraded or a site-config is left on the node', async () => {
    const degrade = (status: string) =>
      patchConfigStatus('clusteroperators', 'console', [
        {
          op: 'replace',
          path: '/status/conditions/2',
          value: {
            type: 'Degraded',
            status,
            reason: 'Test',
            message: 'x',
            lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
          },
        },
      ]);
    await degrade('True');
    writeFileSync(path.join(root, 'etc/sno-relocate/site-config.yaml'), 'left: behind\n');
    try {
      const r = check(20);
      expect(r.code).toBe(1);
      expect(lineOf(r.stdout, 'cluster operators')).toBe('FAIL    cluster operators: ClusterOperator console Degraded');
      expect(lineOf(r.stdout, 'no site-config')).toContain('/etc/sno-relocate/site-config.yaml is on the node');
    } finally {
      await degrade('False');
      rmSync(path.join(root, 'etc/sno-relocate/site-config.yaml'));
    }
  });

  it('fails and seal refuses within 24 hours of installation, naming when the node is fit to ship', async () => {
    const completed = (at: string) =>
      patchConfigStatus('clusterversions', 'version', [
        { op: 'replace', path: '/status/history/0/completionTime', value: at },
      ]);
    const before = readdirSync(path.join(root, STATE)).sort();
    // as the cluster version operator records an installation that completed two hours ago
    const installed = new Date(Date.now() - 2 * 3_600_000);
    await completed(installed.toISOString().replace(/\.\d+Z$/, 'Z'));
    try {
      const fit = new Date(Math.floor(installed.getTime() / 1000) * 1000 + 24 * 3_600_000);
      const r = check(20);
      expect(r.code).toBe(1);
      expect(lineOf(r.stdout, 'installation age')).toBe(
        `FAIL    installation age: installed ${installed.toISOString().slice(0, 16).replace('T', ' ')} UTC, less than 24 hours ago: its first certificate rotation has not happened; fit to ship from ${fit.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
      );
      const sealed = cli(['factory', 'seal', '--shelf-days', '20']);
      expect(sealed.code).toBe(1);
      expect(sealed.stdout).toContain('not sealed: nothing on the node was changed');
      expect(readdirSync(path.join(root, STATE)).sort()).toEqual(before);
    } finally {
      await completed('2025-01-01T01:00:00Z');
    }
    expect(lineOf(check(20).stdout, 'installation age')).toMatch(
      /^ok +installation age: installed more than 24 hours ago/,
    );
  });

  it('seal refuses an unfit node and changes nothing', () => {
    const before = readdirSync(path.join(root, STATE)).sort();
    const r = cli(['factory', 'seal', '--shelf-days', '60']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('not sealed: nothing on the node was changed');
    expect(readdirSync(path.join(root, STATE)).sort()).toEqual(before);
    expect(readFileSync(path.join(root, STATE, 'kubelet-gate'), 'utf8')).toBe('factory\n');
  });

  it('seals a fit node: factory run cleared, gate closed for the next boot, shipment shown by status, powered off over D-Bus', async () => {
    // a trusted key now, and a test relocation's leftovers in the state folder
    const { publicPem } = generateSigningKey();
    mkdirSync(path.join(root, 'etc/sno-relocate/trust'), { recursive: true });
    writeFileSync(path.join(root, 'etc/sno-relocate/trust/factory.pub'), publicPem);
    writeFileSync(path.join(root, STATE, 'state.json'), '{}');
    const bus = await startTestBus();
    let r;
    try {
      r = await runCliAsync(
        [
          'factory',
          'seal',
          '--shelf-days',
          '20',
          '--power-off',
          '--root',
          root,
          '--kubeconfig',
          env.cluster.kubeconfigPath,
        ],
        { DBUS_SYSTEM_BUS_ADDRESS: bus.address },
      );
      expect((await bus.services.calls()).filter((c) => c.member === 'StartUnit')).toEqual([
        { member: 'StartUnit', args: ['poweroff.target', 'replace-irreversibly'] },
      ]);
    } finally {
      await bus.stop();
    }
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('powering off now: poweroff.target over D-Bus');
    expect(lineOf(r.stdout, 'trust anchors')).toMatch(/^ok +trust anchors: 1 key\(s\)/);
    expect(r.stdout).toMatch(/sealed at \S+: cleared kubelet-gate, state\.json from \/var\/lib\/sno-relocate/);
    expect(readdirSync(path.join(root, STATE))).toEqual(['shipment.json']);
    expect(existsSync(path.join(root, STATE, 'kubelet-gate'))).toBe(false);

    // the power-on-by date: the store application's certificate is the first that nothing renews
    const expiry = opensslNotAfter(readFileSync(path.join(certs, 'shop.example.net.crt'), 'utf8'));
    const date = new Date(Date.parse(expiry) - 7 * DAY_MS).toISOString();
    const powerOnBy = `power on by ${date.slice(0, 10)}: Secret shop-app/storefront-tls (CN=shop.example.net) expires ${expiry.slice(0, 10)} and nothing renews it while the node is off`;
    expect(r.stdout).toContain(`\n${powerOnBy}\n`);
    const shipment = JSON.parse(readFileSync(path.join(root, STATE, 'shipment.json'), 'utf8')) as {
      powerOnBy: unknown;
    };
    expect(shipment.powerOnBy).toEqual({
      date,
      expiry,
      certificate: 'Secret shop-app/storefront-tls (CN=shop.example.net)',
    });

    const status = runCli(['status', '--root', root]);
    expect(status.stdout).toMatch(
      /^Shipped: {2}\d{4}-\d\d-\d\dT\S+ \(factory seal; certificates checked for 20 days on the shelf\)$/m,
    );
    expect(status.stdout).toContain(`\nShelf:    ${powerOnBy}\n`);
    const gate = runCli(['gate', '--root', root]);
    expect(gate.stdout).toBe('no site-config waiting; kubelet gate left closed\n');
  });
});
