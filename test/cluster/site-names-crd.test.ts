/**
 * The site-config's names against the API objects that receive them, as the mirror rules are in
 * mirror-crd.test.ts: every value of a table goes through the agent's validation and through a real
 * kube-apiserver, as the objects the run writes (baseDomain and clusterName: the ingress config's
 * componentRoutes and the Routes moved under the new apps domain; hostname: the Node; the pull secret:
 * the cluster's dockerconfigjson Secret). A row says whether the agent is as strict as the API or, with
 * the reason, stricter; never looser, so nothing `validate` accepts is refused half way through a run.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasErrors } from '../../src/base/findings.js';
import { parseSiteConfig } from '../../src/config/v1/parse.js';
import { documentRules, runRules } from '../../src/config/v1/rules.js';
import { COMPONENT_ROUTES, domainsOf } from '../../src/kube/openshift.js';
import { REPO } from '../helpers/cli.js';
import { baseDocument } from '../invalid/corpus.js';
import { apiAccepts } from '../kube/accepts.js';
import { missingBinaries, startCluster, type TestCluster } from '../kube/cluster.js';
import { applyCrds, CRD_DIR } from '../kube/install.js';

const UPSTREAM =
  ['../shared/crds/upstream', '../../shared/crds/upstream'].map((p) => path.join(REPO, p)).find(existsSync) ?? '';

/** `same`: the agent refuses exactly what the API refuses; otherwise why the agent refuses more. */
type Verdict = 'same' | { stricter: string };
const label = (n: number, c = 'a') => c.repeat(n);

/** [what, baseDomain, clusterName, verdict] */
const DOMAINS: [string, string, string, Verdict][] = [
  ['a usual domain', 'store42.example.com', 'sno', 'same'],
  ['a 63-character label', `${label(63)}.example.com`, 'sno', 'same'],
  ['a 64-character label', `${label(64)}.example.com`, 'sno', 'same'],
  ['a 63-character cluster name', 'store42.example.com', label(63, 'c'), 'same'],
  ['a punycode label', 'xn--bcher-kva.example.com', 'sno', 'same'],
  ['a domain too long for the console hosts', [55, 55, 55, 55].map((n) => label(n)).join('.'), 'sno', 'same'],
  ['a domain just short enough', [53, 53, 53, 53].map((n) => label(n)).join('.'), 'sno', 'same'],
  ['an underscore', 'store_42.example.com', 'sno', 'same'],
  ['a label starting with a dash', '-store42.example.com', 'sno', 'same'],
  ['an empty label', 'store42..example.com', 'sno', 'same'],
  ['a trailing dot', 'store42.example.com.', 'sno', 'same'],
  ['a letter outside ASCII', 'bücher.example.com', 'sno', 'same'],
  ['capital letters', 'Store42.Example.com', 'sno', { stricter: 'DNS names are compared lowercase' }],
  ['a one-label domain', 'example', 'sno', { stricter: 'api.<cluster>.<one label> is no site domain' }],
  ['a dot in the cluster name', 'store42.example.com', 'sno.x', { stricter: 'a cluster name is one DNS label' }],
];

/** [what, hostname, verdict] */
const HOSTNAMES: [string, string, Verdict][] = [
  ['a short name', 'sno-store42', 'same'],
  ['a fully qualified name', 'sno-store42.store42.example.com', 'same'],
  ['capital letters', 'SNO-store42', 'same'],
  ['an underscore', 'sno_store42', 'same'],
  ['a trailing dash', 'sno-', 'same'],
  ['254 characters', [63, 63, 63, 62].map((n) => label(n)).join('.'), 'same'],
  ['a 64-character first label', label(64), { stricter: 'a Linux host name is at most 64 bytes' }],
  ['localhost', 'localhost', { stricter: 'every node would claim the same name' }],
];

/** [what, pull secret, verdict] */
const PULL_SECRETS: [string, unknown, Verdict][] = [
  ['one registry', { auths: { 'registry.example.com:5000': { auth: 'dTpw' } } }, 'same'],
  ['no registry (a warning)', { auths: {} }, 'same'],
  ['auths not an object', { auths: [] }, { stricter: 'a registry auth file maps registries to logins' }],
];

function agentAccepts(edit: (spec: Record<string, unknown>) => void): boolean {
  const doc = baseDocument() as { spec: Record<string, unknown> };
  edit(doc.spec);
  const { value: config, findings } = parseSiteConfig(doc);
  const rules = config ? runRules(documentRules, { config, nmstatePath: '$.spec.network.nmstate' }) : [];
  return !hasErrors([...findings, ...rules]);
}

function expectVerdict(agent: boolean, cluster: boolean, verdict: Verdict): void {
  if (verdict === 'same') expect({ agent }).toEqual({ agent: cluster });
  else expect({ agent, cluster, ...verdict }).toEqual({ agent: false, cluster: true, ...verdict });
}

const skipped = missingBinaries().length > 0 || process.env.SNO_RELOCATE_SKIP_KUBE === '1';

describe.skipIf(skipped)('site names agree with the API objects that receive them', () => {
  let cluster: TestCluster;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let n = 0;

  beforeAll(async () => {
    cluster = await startCluster();
    await applyCrds(cluster.kubeconfigPath, { only: ['ingresses', 'routes'] });
    custom = cluster.kubeConfig().makeApiClient(CustomObjectsApi);
    core = cluster.kubeConfig().makeApiClient(CoreV1Api);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it.runIf(UPSTREAM !== '')('installs the host patterns upstream’s CRDs have', () => {
    const patterns = (file: string) =>
      [...readFileSync(file, 'utf8').matchAll(/^\s+pattern: '?(\^[^'\n]+)'?$/gm)].map((m) => m[1]);
    for (const name of ['config.openshift.io_ingresses.yaml', 'route.openshift.io_routes.yaml']) {
      const upstream = new Set(patterns(path.join(UPSTREAM, name)));
      for (const p of patterns(path.join(CRD_DIR, name))) expect(upstream, `${name}: ${p}`).toContain(p);
    }
  });

  it.each(DOMAINS)('baseDomain/clusterName, %s: the agent and the API server agree', async (_w, base, name, v) => {
    const agent = agentAccepts((spec) => Object.assign(spec, { baseDomain: base, clusterName: name }));
    const { apps } = domainsOf(name, base);
    const hosts = COMPONENT_ROUTES.map((r) => `${r.host}.${apps}`);
    const ingress = apiAccepts(
      custom.createClusterCustomObject({
        group: 'config.openshift.io',
        version: 'v1',
        plural: 'ingresses',
        body: {
          apiVersion: 'config.openshift.io/v1',
          kind: 'Ingress',
          metadata: { name: `table-${++n}` },
          spec: {
            appsDomain: apps,
            componentRoutes: COMPONENT_ROUTES.map((r, i) => ({
              namespace: r.namespace,
              name: r.name,
              hostname: hosts[i],
              servingCertKeyPairSecret: { name: r.secret },
            })),
          },
        },
      }),
    );
    const routes = hosts.map((host) =>
      apiAccepts(
        custom.createNamespacedCustomObject({
          group: 'route.openshift.io',
          version: 'v1',
          namespace: 'default',
          plural: 'routes',
          body: {
            apiVersion: 'route.openshift.io/v1',
            kind: 'Route',
            metadata: { name: `table-${++n}` },
            spec: { host, to: { kind: 'Service', name: 'console' } },
          },
        }),
      ),
    );
    const accepted = await Promise.all([ingress, ...routes]);
    expectVerdict(agent, accepted.every(Boolean), v);
  });

  it.each(HOSTNAMES)('hostname, %s: the agent and the API server agree', async (_w, hostname, v) => {
    const agent = agentAccepts((spec) => Object.assign(spec, { hostname }));
    const node = await apiAccepts(core.createNode({ body: { metadata: { name: hostname } } }));
    expectVerdict(agent, node, v);
  });

  it.each(PULL_SECRETS)('pullSecret, %s: the agent and the API server agree', async (_w, pullSecret, v) => {
    const agent = agentAccepts((spec) => Object.assign(spec, { pullSecret }));
    const secret = await apiAccepts(
      core.createNamespacedSecret({
        namespace: 'default',
        body: {
          metadata: { name: `table-${++n}` },
          type: 'kubernetes.io/dockerconfigjson',
          stringData: { '.dockerconfigjson': JSON.stringify(pullSecret) },
        },
      }),
    );
    expectVerdict(agent, secret, v);
  });
});
