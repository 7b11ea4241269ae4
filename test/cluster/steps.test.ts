/**
 * The cluster phase (csr-approval .. mirrors) on a seeded factory cluster served by a real
 * kube-apiserver, through the real engine: what it plans, what the cluster holds afterwards, and
 * that a rerun and a second relocation change only what they must.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CertificatesV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CUSTOM_HOSTS,
  FACTORY_APPS_DOMAIN,
  FACTORY_ICSP_NAME,
  FACTORY_REGISTRY,
  FACTORY_NODE_NAME,
  FOREIGN_CERT_NAMES,
  FOREIGN_CERT_SECRET,
} from '../kube/factory-cluster.js';
import { STEPS } from '../../src/steps/index.js';
import { deleteCrds } from '../kube/install.js';
import { runAgentAsync, writeSiteFolder } from '../node/cli.js';
import {
  agent,
  CLUSTER_PHASE,
  problems,
  startFactory,
  STATE_DIR,
  storeSite,
  type ClusterEnv,
  type LogEntry,
} from './env.js';

const NEW_APPS = 'apps.sno.store42.example.com';
const NEW_API = 'api.sno.store42.example.com';
const cfg = { group: 'config.openshift.io', version: 'v1' };
const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const openssl = (args: string[], input?: string): string =>
  execFileSync('openssl', args, {
    encoding: 'utf8',
    ...(input !== undefined && { input }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });

describe.skipIf(kubeSkipped)('cluster steps on a real API', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  let root: string;

  beforeAll(async () => {
    env = await startFactory();
    kc = env.cluster.kubeConfig();
  });
  // a test that moved the cluster leaves kube-apiserver revisions rolling out (each a restart of the
  // API server); the next one starts on a calm cluster, as the test's own raw API calls do not retry
  afterEach(async () => {
    await env?.models?.settled();
  });
  afterAll(async () => {
    await env?.stop();
  });

  const custom = () => kc.makeApiClient(CustomObjectsApi);
  const core = () => kc.makeApiClient(CoreV1Api);
  const routes = async () =>
    (
      (await custom().listClusterCustomObject({ group: 'route.openshift.io', version: 'v1', plural: 'routes' })) as {
        items: {
          metadata: { namespace: string; name: string; resourceVersion: string };
          spec: Record<string, unknown> & { host: string };
        }[];
      }
    ).items;
  const csrState = async (name: string) => {
    const csr = await kc.makeApiClient(CertificatesV1Api).readCertificateSigningRequest({ name });
    return csr.status?.conditions?.find((c) => c.type === 'Approved')?.status === 'True' ? 'approved' : 'pending';
  };
  const secret = async (name: string) => core().readNamespacedSecret({ namespace: 'openshift-config', name });

  it('plans from the live API without changing it: approvals, certificates, config diffs, routes, a redacted pull secret, mirrors', async () => {
    const a = await agent(env, storeSite());
    const before = await routes();
    const plans = await a.plan();
    const byStep = Object.fromEntries(plans.map((p) => [p.step, p]));
    expect(byStep['csr-approval']).toMatchObject({ action: 'change' });
    const approvals =
      byStep['csr-approval']!.action === 'change' ? byStep['csr-approval']!.changes.map((c) => c.target) : [];
    expect(approvals.sort()).toEqual(
      [
        `CertificateSigningRequest ${env.factory.csrs.nodeClient}`,
        `CertificateSigningRequest ${env.factory.csrs.nodeServing}`,
      ].sort(),
    );
    const domain = byStep.domain!;
    expect(domain.action).toBe('change');
    const domainText = JSON.stringify(domain);
    expect(domainText).toContain(`+ spec.appsDomain: \\"${NEW_APPS}\\"`);
    expect(domainText).toContain('Secret openshift-config/sno-relocate-api');
    expect(domainText).not.toMatch(/PRIVATE KEY|BEGIN CERTIFICATE/);
    const routesPlan = byStep.routes!;
    expect(routesPlan.action === 'change' && routesPlan.changes.length).toBe(
      env.factory.oldDomainRoutes.filter((r) => !r.owner).length,
    );
    expect(JSON.stringify(byStep['cluster-pull-secret'])).toContain('- <redacted: 2 registries>');
    expect(JSON.stringify(byStep['cluster-pull-secret'])).toContain('+ <redacted: 1 registry>');
    expect(JSON.stringify(plans)).not.toContain('store-secret-token');
    expect(JSON.stringify(plans)).not.toContain(Buffer.from('store:store-secret-token').toString('base64'));
    expect(byStep.mirrors).toMatchObject({
      action: 'change',
      changes: [
        { action: 'create', target: 'ImageDigestMirrorSet sno-relocate-digest-mirrors' },
        { action: 'create', target: 'ImageTagMirrorSet sno-relocate-tag-mirrors' },
      ],
    });
    // nothing changed
    expect(await routes()).toEqual(before);
    expect(await csrState(env.factory.csrs.nodeClient!)).toBe('pending');
  });

  it('runs the cluster phase: only this node is approved, the cluster serves the site domain with verifiable certificates', async () => {
    const a = await agent(env, storeSite());
    root = a.root;
    const state = await a.run();
    expect(state.result).toBe('succeeded');
    // the kube-apiserver restarted under the run (its revisions), and the agent rode it out: an
    // outage a request met (when one did) ended with the API answering again
    const entries = a.logs.map((l) => JSON.parse(l) as LogEntry);
    const outages = entries.filter((l) => l.event === 'apiOutageStarted').length;
    expect(entries.filter((l) => l.event === 'apiOutageEnded' && /answers again/.test(l.msg))).toHaveLength(outages);
    expect(problems(a.logs).filter((l) => l.event !== 'apiOutageStarted')).toEqual([]);
    await env.models!.settled();

    // CSRs: this node's approved, the intruder's left alone with the reason logged
    expect(await csrState(env.factory.csrs.nodeClient!)).toBe('approved');
    expect(await csrState(env.factory.csrs.nodeServing!)).toBe('approved');
    expect(await csrState(env.factory.csrs.otherNodeClient!)).toBe('pending');
    expect(a.logs.join('\n')).toMatch(
      new RegExp(
        `CSR ${env.factory.csrs.otherNodeClient} left alone: it is for node intruder-node, not this node \\(${FACTORY_NODE_NAME}\\)`,
      ),
    );

    // the site CA is kept, its key 0600
    const caDir = path.join(root, STATE_DIR, 'site-ca');
    expect(statSync(path.join(caDir, 'ca.key')).mode & 0o777).toBe(0o600);
    const caFile = path.join(caDir, 'ca.crt');

    // every serving certificate verifies against it with the real openssl, names its host, and matches its key
    const expectations: [string, string, string][] = [
      ['openshift-config', 'sno-relocate-console', `console-openshift-console.${NEW_APPS}`],
      ['openshift-config', 'sno-relocate-downloads', `downloads-openshift-console.${NEW_APPS}`],
      ['openshift-config', 'sno-relocate-oauth', `oauth-openshift.${NEW_APPS}`],
      ['openshift-config', 'sno-relocate-api', NEW_API],
      // the router's default certificate: the routes left on the factory domain are served too
      ['openshift-ingress', 'sno-relocate-apps-wildcard', `anything.${NEW_APPS}`],
    ];
    for (const [namespace, name, host] of expectations) {
      const s = await core().readNamespacedSecret({ namespace, name });
      expect(s.type).toBe('kubernetes.io/tls');
      const crt = Buffer.from(s.data!['tls.crt']!, 'base64').toString();
      const key = Buffer.from(s.data!['tls.key']!, 'base64').toString();
      const leafFile = path.join(root, `${name}.crt`);
      writeFileSync(leafFile, crt);
      expect(openssl(['verify', '-CAfile', caFile, leafFile])).toContain(': OK');
      expect(openssl(['x509', '-noout', '-checkhost', host, '-in', leafFile])).toContain('does match certificate');
      expect(
        openssl(['x509', '-noout', '-checkhost', 'console.apps.sno.factory.example.com', '-in', leafFile]),
      ).toContain(namespace === 'openshift-ingress' ? 'does match' : 'does NOT match');
      expect(openssl(['x509', '-noout', '-checkend', String(365 * 86400), '-in', leafFile])).toContain(
        'will not expire',
      );
      expect(openssl(['x509', '-noout', '-pubkey', '-in', leafFile])).toBe(openssl(['pkey', '-pubout'], key));
    }

    // ingress and apiserver config: the site's entries, the foreign named certificate kept
    const ingress = (await custom().getClusterCustomObject({ ...cfg, plural: 'ingresses', name: 'cluster' })) as {
      spec: { domain: string; appsDomain: string; componentRoutes: unknown[] };
    };
    expect(ingress.spec.domain).toBe(FACTORY_APPS_DOMAIN);
    expect(ingress.spec.appsDomain).toBe(NEW_APPS);
    expect(ingress.spec.componentRoutes).toEqual([
      {
        namespace: 'openshift-console',
        name: 'console',
        hostname: `console-openshift-console.${NEW_APPS}`,
        servingCertKeyPairSecret: { name: 'sno-relocate-console' },
      },
      {
        namespace: 'openshift-console',
        name: 'downloads',
        hostname: `downloads-openshift-console.${NEW_APPS}`,
        servingCertKeyPairSecret: { name: 'sno-relocate-downloads' },
      },
      {
        namespace: 'openshift-authentication',
        name: 'oauth-openshift',
        hostname: `oauth-openshift.${NEW_APPS}`,
        servingCertKeyPairSecret: { name: 'sno-relocate-oauth' },
      },
    ]);
    const apiserver = (await custom().getClusterCustomObject({ ...cfg, plural: 'apiservers', name: 'cluster' })) as {
      spec: { audit: unknown; servingCerts: { namedCertificates: unknown[] } };
    };
    expect(apiserver.spec.audit).toEqual({ profile: 'Default' });
    expect(apiserver.spec.servingCerts.namedCertificates).toEqual([
      { names: FOREIGN_CERT_NAMES, servingCertificate: { name: FOREIGN_CERT_SECRET } },
      { names: [NEW_API], servingCertificate: { name: 'sno-relocate-api' } },
    ]);

    // routes: under the new domain with the rest of the spec kept; custom hosts untouched; the
    // operators' own routes as their operators keep them (test/cluster/operators.test.ts)
    const seededByKey = new Map(env.factory.routes.map((r) => [`${r.namespace}/${r.name}`, r]));
    for (const r of await routes()) {
      const seeded = seededByKey.get(`${r.metadata.namespace}/${r.metadata.name}`);
      if (!seeded || seeded.owner) continue;
      if (CUSTOM_HOSTS.includes(seeded.host)) expect(r.spec.host).toBe(seeded.host);
      else expect(r.spec.host).toBe(seeded.host.replace(FACTORY_APPS_DOMAIN, NEW_APPS));
    }
    const thanos = (await routes()).find((r) => r.metadata.name === 'thanos-querier')!;
    expect(thanos.spec).toEqual({
      host: `thanos-querier-openshift-monitoring.${NEW_APPS}`,
      to: { kind: 'Service', name: 'thanos-querier', weight: 100 },
      port: { targetPort: 'web' },
      path: '/api',
      tls: { termination: 'reencrypt', insecureEdgeTerminationPolicy: 'Redirect' },
      wildcardPolicy: 'None',
    });

    // pull secret replaced
    const pull = JSON.parse(
      Buffer.from((await secret('pull-secret')).data!['.dockerconfigjson']!, 'base64').toString(),
    ) as { auths: object };
    expect(Object.keys(pull.auths)).toEqual(['registry.store42.example.com:5000']);
    // the registries the site dropped are kept, by name only, for the watcher's stale-image check
    const watchContext = readFileSync(path.join(root, STATE_DIR, 'watch-context.json'), 'utf8');
    expect((JSON.parse(watchContext) as { factoryRegistries: string[] }).factoryRegistries).toEqual(
      [FACTORY_REGISTRY, 'quay.io'].sort(),
    );
    expect(watchContext).not.toContain('token');

    // mirrors: ours labelled, the factory's ICSP untouched
    const idms = (await custom().getClusterCustomObject({
      ...cfg,
      plural: 'imagedigestmirrorsets',
      name: 'sno-relocate-digest-mirrors',
    })) as { metadata: { labels: Record<string, string> }; spec: unknown };
    expect(idms.metadata.labels['app.kubernetes.io/managed-by']).toBe('sno-relocate');
    expect(idms.spec).toEqual({
      imageDigestMirrors: [
        {
          source: 'quay.io/openshift-release-dev/ocp-release',
          mirrors: ['registry.store42.example.com:5000/ocp/release'],
        },
      ],
    });
    await custom().getClusterCustomObject({ ...cfg, plural: 'imagetagmirrorsets', name: 'sno-relocate-tag-mirrors' });
    await custom().getClusterCustomObject({
      group: 'operator.openshift.io',
      version: 'v1alpha1',
      plural: 'imagecontentsourcepolicies',
      name: FACTORY_ICSP_NAME,
    });

    // secrets reach neither the logs nor the state
    const everything = a.logs.join('\n') + readFileSync(path.join(root, STATE_DIR, 'state.json'), 'utf8');
    for (const leak of [
      'store-secret-token',
      Buffer.from('store:store-secret-token').toString('base64'),
      'PRIVATE KEY',
    ])
      expect(everything).not.toContain(leak);
  }, 240_000);

  it('reruns as a no-op: the same CA, the same secrets, no duplicated named certificate', async () => {
    // the rollouts the first run started (kube-apiserver revisions) are over
    await env.models!.settled();
    const caBefore = readFileSync(path.join(root, STATE_DIR, 'site-ca', 'ca.crt'), 'utf8');
    const versions = await Promise.all(
      ['sno-relocate-api', 'sno-relocate-console'].map(async (n) => (await secret(n)).metadata!.resourceVersion),
    );
    const routeVersions = (await routes()).map((r) => r.metadata.resourceVersion);
    const a = await agent(env, storeSite(), root);
    const plans = await a.plan();
    expect(plans.map((p) => [p.step, p.action])).toEqual(CLUSTER_PHASE.map((s) => [s, 'noop']));
    expect((await a.run()).result).toBe('succeeded');
    expect(readFileSync(path.join(root, STATE_DIR, 'site-ca', 'ca.crt'), 'utf8')).toBe(caBefore);
    expect(
      await Promise.all(
        ['sno-relocate-api', 'sno-relocate-console'].map(async (n) => (await secret(n)).metadata!.resourceVersion),
      ),
    ).toEqual(versions);
    expect((await routes()).map((r) => r.metadata.resourceVersion)).toEqual(routeVersions);
    expect(problems(a.logs)).toEqual([]);
  });

  it('relocates again to another domain: routes follow from the remembered domain, the agent entries are replaced, tag mirrors dropped', async () => {
    const site = storeSite({
      baseDomain: 'store77.example.com',
      pullSecretPolicy: 'merge',
      imageTagMirrors: [],
      pullSecret: { auths: { 'registry.store77.example.com': { auth: 'czc3OnRva2Vu' } } },
    });
    const a = await agent(env, site, root);
    expect((await a.run()).result).toBe('succeeded');
    const apps77 = 'apps.sno.store77.example.com';
    const hosts = (await routes()).flatMap((r) => (r.spec.host ? [r.spec.host] : []));
    expect(hosts.filter((h) => h.endsWith(NEW_APPS))).toEqual([]);
    // the agent's and the operators' (console-custom, downloads-custom, oauth-openshift)
    expect(hosts.filter((h) => h.endsWith(apps77)).length).toBe(
      env.factory.oldDomainRoutes.filter((r) => !r.owner).length + 3,
    );
    expect(hosts).toEqual(expect.arrayContaining(CUSTOM_HOSTS));
    const apiserver = (await custom().getClusterCustomObject({ ...cfg, plural: 'apiservers', name: 'cluster' })) as {
      spec: { servingCerts: { namedCertificates: unknown[] } };
    };
    expect(apiserver.spec.servingCerts.namedCertificates).toEqual([
      { names: FOREIGN_CERT_NAMES, servingCertificate: { name: FOREIGN_CERT_SECRET } },
      { names: ['api.sno.store77.example.com'], servingCertificate: { name: 'sno-relocate-api' } },
    ]);
    // merged: the first site's registry stays beside the new one
    const pull = JSON.parse(
      Buffer.from((await secret('pull-secret')).data!['.dockerconfigjson']!, 'base64').toString(),
    ) as { auths: object };
    expect(Object.keys(pull.auths).sort()).toEqual([
      'registry.store42.example.com:5000',
      'registry.store77.example.com',
    ]);
    await expect(
      custom().getClusterCustomObject({ ...cfg, plural: 'imagetagmirrorsets', name: 'sno-relocate-tag-mirrors' }),
    ).rejects.toMatchObject({ code: 404 });
    expect(problems(a.logs).filter((l) => !/transient failure, retrying/.test(l.msg))).toEqual([]);
  });

  it('reports a CatalogSource pulled by tag from a registry with only digest mirrors', async () => {
    await custom().createNamespacedCustomObject({
      group: 'operators.coreos.com',
      version: 'v1alpha1',
      namespace: 'openshift-marketplace',
      plural: 'catalogsources',
      body: {
        apiVersion: 'operators.coreos.com/v1alpha1',
        kind: 'CatalogSource',
        metadata: { name: 'store-operators', namespace: 'openshift-marketplace' },
        spec: { sourceType: 'grpc', image: 'quay.io/openshift-release-dev/ocp-release/index:v4.16' },
      },
    });
    const a = await agent(env, storeSite({ baseDomain: 'store77.example.com', imageTagMirrors: [] }), root);
    const [plan] = await a.plan(['mirrors']);
    expect(plan).toMatchObject({
      action: 'noop',
      reason: expect.stringContaining(
        'CatalogSource openshift-marketplace/store-operators pulls quay.io/openshift-release-dev/ocp-release/index:v4.16 by tag',
      ),
    });
    expect(problems(a.logs).map((l) => l.msg)).toEqual([expect.stringContaining('has only digest mirrors')]);
  });

  it('refuses to take over a mirror set of its name that it did not make', async () => {
    const itms = { ...cfg, plural: 'imagetagmirrorsets' };
    await custom().createClusterCustomObject({
      ...itms,
      body: {
        apiVersion: 'config.openshift.io/v1',
        kind: 'ImageTagMirrorSet',
        metadata: { name: 'sno-relocate-tag-mirrors' },
        spec: { imageTagMirrors: [{ source: 'example.com/hand', mirrors: ['hand.example.com/x'] }] },
      },
    });
    try {
      const a = await agent(env, storeSite({ baseDomain: 'store77.example.com' }), root);
      const [plan] = await a.plan(['mirrors']);
      expect(plan).toMatchObject({
        action: 'conflict',
        reason:
          "ImageTagMirrorSet sno-relocate-tag-mirrors exists without the label app.kubernetes.io/managed-by=sno-relocate, so it is not the agent's: remove or rename it, or label it to hand it to the agent",
      });
      await expect(a.run(['mirrors'])).rejects.toMatchObject({ exitCode: 3 });
      const kept = (await custom().getClusterCustomObject({ ...itms, name: 'sno-relocate-tag-mirrors' })) as {
        spec: unknown;
      };
      expect(kept.spec).toEqual({ imageTagMirrors: [{ source: 'example.com/hand', mirrors: ['hand.example.com/x'] }] });
    } finally {
      await custom().deleteClusterCustomObject({ ...itms, name: 'sno-relocate-tag-mirrors' });
    }
  });

  it('refuses tag mirrors on a cluster without ImageTagMirrorSet and falls back to ImageContentSourcePolicy for digests', async () => {
    await deleteCrds(env.cluster.kubeconfigPath, { only: ['mirrorSets'] });
    const tagged = await agent(env, storeSite({ baseDomain: 'store77.example.com' }), root);
    const [refused] = await tagged.plan(['mirrors']);
    expect(refused).toMatchObject({
      action: 'conflict',
      reason: expect.stringContaining('does not serve ImageTagMirrorSet'),
    });
    const digestOnly = await agent(env, storeSite({ baseDomain: 'store77.example.com', imageTagMirrors: [] }), root);
    expect((await digestOnly.run(['mirrors'])).result).toBe('succeeded');
    const icsps = (await custom().listClusterCustomObject({
      group: 'operator.openshift.io',
      version: 'v1alpha1',
      plural: 'imagecontentsourcepolicies',
    })) as { items: { metadata: { name: string } }[] };
    expect(icsps.items.map((i) => i.metadata.name).sort()).toEqual([FACTORY_ICSP_NAME, 'sno-relocate-digest-mirrors']);
  });
  it('keeps the cluster name: a site-config naming it is taken, one naming another cluster is refused with exit 3', async () => {
    const same = await agent(env, storeSite({ baseDomain: 'store77.example.com', clusterName: 'sno' }), root);
    const [planned] = await same.plan(['domain']);
    expect(planned).toMatchObject({ step: 'domain', action: expect.stringMatching(/^(noop|change)$/) });
    const other = await agent(env, storeSite({ baseDomain: 'store77.example.com', clusterName: 'edge' }), root);
    await expect(other.plan(['domain'])).rejects.toMatchObject({
      exitCode: 3,
      message:
        'spec.clusterName is edge, but the cluster is named sno: renaming the cluster is not supported; leave clusterName out or set it to sno',
    });
  });

  it("serves the site's own certificates when it gives them, and refuses ones that do not cover the names", async () => {
    const selfSigned = (name: string) => {
      const file = path.join(root, `given-${name.replace('*', 'star')}`);
      openssl([
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        `${file}.key`,
        '-out',
        `${file}.crt`,
        '-subj',
        `/CN=${name}`,
        '-days',
        '90',
        '-addext',
        `subjectAltName=DNS:${name}`,
      ]);
      return { certPem: readFileSync(`${file}.crt`, 'utf8'), keyPem: readFileSync(`${file}.key`, 'utf8') };
    };
    const ingress = selfSigned('*.apps.sno.store77.example.com');
    const api = selfSigned('api.sno.store77.example.com');
    const a = await agent(
      env,
      storeSite({ baseDomain: 'store77.example.com', imageTagMirrors: [], certificates: { ingress, api } }),
      root,
    );
    expect((await a.run(['domain'])).result).toBe('succeeded');
    for (const [name, pair] of [
      ['sno-relocate-console', ingress],
      ['sno-relocate-oauth', ingress],
      ['sno-relocate-api', api],
    ] as const) {
      const s = await secret(name);
      expect(Buffer.from(s.data!['tls.crt']!, 'base64').toString()).toBe(pair.certPem);
      expect(Buffer.from(s.data!['tls.key']!, 'base64').toString()).toBe(pair.keyPem);
    }
    const wrong = await agent(
      env,
      storeSite({ baseDomain: 'store77.example.com', certificates: { api: selfSigned('api.elsewhere.example.com') } }),
      root,
    );
    const [plan] = await wrong.plan(['domain']);
    expect(plan).toMatchObject({
      action: 'conflict',
      reason: 'spec.certificates.api: the certificate does not cover api.sno.store77.example.com',
    });
  });
  it('runs through the command line: run --only cluster --skip health --kubeconfig, then plan shows nothing left', async () => {
    const dir = path.join(root, 'stick');
    writeSiteFolder(dir, 'store-0099', {
      baseDomain: 'store99.example.com',
      hostname: FACTORY_NODE_NAME,
      network: { nmstate: { interfaces: [] }, internalIP: '192.168.127.10/24' },
      pullSecret: {
        auths: { 'registry.store99.example.com': { auth: Buffer.from('store99:cli-token').toString('base64') } },
      },
      imageDigestMirrors: [
        { source: 'quay.io/openshift-release-dev/ocp-release', mirrors: ['registry.store99.example.com/ocp/release'] },
      ],
      // no registry serves registry.store99.example.com here: test/registry checks against a real one
      registryCheck: 'skip',
    });
    const common = ['--root', root, '--kubeconfig', env.cluster.kubeconfigPath, '--log-format', 'json'];
    const run = await runAgentAsync(['run', dir, '--only', 'cluster', '--skip', 'health', ...common], {});
    // the two warnings this setup earns: no trust anchor on this root, and the catalog an earlier test made
    const warnings = run.stderr
      .split('\n')
      .filter((l) => /"level":(40|50|60)/.test(l))
      .map((l) => (JSON.parse(l) as { msg: string }).msg)
      // the kube-apiserver's revisions restart it under the run
      .filter((m) => !/transient failure, retrying/.test(m));
    expect(warnings).toEqual([
      expect.stringContaining('no trust anchor is installed'),
      expect.stringContaining('CatalogSource openshift-marketplace/store-operators pulls'),
    ]);
    expect(run.code).toBe(0);
    const hosts = (await routes()).flatMap((r) => (r.spec.host ? [r.spec.host] : []));
    expect(hosts.filter((h) => h.endsWith('.apps.sno.store99.example.com')).length).toBe(
      env.factory.oldDomainRoutes.filter((r) => !r.owner).length + 3,
    );
    await env.models!.settled();
    const plan = await runAgentAsync(
      ['plan', dir, '--only', 'cluster', '--skip', 'health', '-o', 'json', ...common],
      {},
    );
    expect(plan.code).toBe(0);
    // every cluster step but health is done (access has nothing to give, in-service no workloads named)
    const planned = (JSON.parse(plan.stdout) as { steps: { step: string; action: string }[] }).steps;
    const asked = STEPS.filter((s) => s.group === 'cluster' && s.name !== 'health');
    expect(planned.map((p) => [p.step, p.action])).toEqual(asked.map((s) => [s.name, 'noop']));
    expect(run.stderr + plan.stdout + plan.stderr).not.toContain('cli-token');
  }, 240_000);

  it("verifies the routes it patched even when the API server's watch cache has not caught up with them", async () => {
    const a = await agent(env, storeSite({ baseDomain: 'store88.example.com' }));
    // a list at resourceVersion 0 may be answered from any point of the watch cache (the API's
    // contract): here always from the point of the run's first such list, before the patches
    const lagging = new Map<string, unknown>();
    a.ctx.kube = async () =>
      new Proxy(a.kube, {
        get(target, prop) {
          if (prop !== 'list') return Reflect.get(target, prop, target) as unknown;
          return async (apiVersion: string, kind: string, options?: { notOlderThan?: string }) => {
            if (options?.notOlderThan !== '0') return target.list(apiVersion, kind, options);
            const key = `${apiVersion}/${kind}`;
            if (!lagging.has(key)) lagging.set(key, await target.list(apiVersion, kind, options));
            return lagging.get(key);
          };
        },
      });
    const state = await a.run(['routes']);
    expect(state.steps.routes).toMatchObject({ status: 'done' });
    const hosts = (await routes()).flatMap((r) => (r.spec.host ? [r.spec.host] : []));
    expect(hosts.filter((h) => h.endsWith('.apps.sno.store88.example.com')).length).toBe(
      env.factory.oldDomainRoutes.filter((r) => !r.owner).length,
    );
  });
});
