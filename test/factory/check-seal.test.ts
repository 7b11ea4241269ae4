/**
 * `factory check` and `factory seal` against a real kube-apiserver and a node laid out under a
 * temporary root: prepared on the node, the machine-config daemon's files in place, the master
 * pool rendered with the agent's MachineConfigs. The check passes only when the node is fit to
 * ship; it reads real certificates (made by openssl) from the node's files and the cluster's TLS
 * secrets and sorts those expired on arrival by who renews them; seal clears the factory run,
 * closes the kubelet gate and records the shipment that `status` shows.
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
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CheckReport } from '../../src/factory/check.js';
import { generateSigningKey } from '../../src/trust/signature.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { startTestBus } from '../dbus/bus.js';
import { runCli } from '../helpers/cli.js';
import {
  applyMachineConfigs,
  INSTALL_ADDRESS,
  netnsAvailable,
  runCliAsync,
  runOnNode,
  seedRelocatable,
} from './env.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const MCO = { group: 'machineconfiguration.openshift.io', version: 'v1' };
const STATE = 'var/lib/sno-relocate';

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
  const cli = (args: string[]) =>
    runCli([...args, '--root', root, '--kubeconfig', env.cluster.kubeconfigPath], { timeoutMs: 120_000 });
  const check = (days: number) => cli(['factory', 'check', '--shelf-days', String(days)]);
  const lineOf = (stdout: string, name: string) => stdout.split('\n').find((l) => l.includes(` ${name}: `));

  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
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
    const custom = kc.makeApiClient(CustomObjectsApi);
    const rendered = 'rendered-master-relocatable';
    await custom.patchClusterCustomObject({
      ...MCO,
      plural: 'machineconfigpools',
      name: 'master',
      body: [{ op: 'replace', path: '/spec/configuration', value: { name: rendered } }],
    });
    await custom.patchClusterCustomObjectStatus({
      ...MCO,
      plural: 'machineconfigpools',
      name: 'master',
      body: [
        {
          op: 'replace',
          path: '/status/configuration',
          value: {
            name: rendered,
            source: ['00-master', '50-master-sno-relocate', '51-master-sno-relocate-internal-ip'].map((name) => ({
              apiVersion: 'machineconfiguration.openshift.io/v1',
              kind: 'MachineConfig',
              name,
            })),
          },
        },
      ],
    });
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
    // the seeded foreign certificate is valid for a year
    expect(fate('Secret openshift-config/foreign-cert')?.fate).toBe('valid');
    const text = check(60).stdout;
    expect(lineOf(text, 'certificates')).toMatch(
      /^FAIL {4}certificates: 1 certificate\(s\) expire within 60 days and nothing renews them: Secret shop-app\/storefront-tls/,
    );
    expect(text).toMatch(/agent approves renewal\s+\/var\/lib\/kubelet\/pki\/kubelet-client-current\.pem/);
    expect(text).toContain('NOT fit to ship');
  });

  it('fails while a ClusterOperator is Degraded or a site-config is left on the node', async () => {
    const custom = env.cluster.kubeConfig().makeApiClient(CustomObjectsApi);
    const degrade = (status: string) =>
      custom.patchClusterCustomObjectStatus({
        group: 'config.openshift.io',
        version: 'v1',
        plural: 'clusteroperators',
        name: 'console',
        body: [
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
        ],
      });
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

    const status = runCli(['status', '--root', root]);
    expect(status.stdout).toMatch(
      /^Shipped: {2}\d{4}-\d\d-\d\dT\S+ \(factory seal; certificates checked for 20 days on the shelf\)$/m,
    );
    const gate = runCli(['gate', '--root', root]);
    expect(gate.stdout).toBe('no site-config waiting; kubelet gate left closed\n');
  });
});
