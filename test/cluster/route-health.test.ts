/**
 * The console and OAuth routes must answer from inside the cluster before the run is done: the
 * operators' models fetch them as upstream does (models/route-health.ts) through the cluster's DNS
 * (a real dnsmasq the node's resolv.conf names), the proxy proxy.config gives them, and their own
 * CA pools, from a router data plane serving the routes' certificates on port 443. Where the site's
 * names do not resolve inside the cluster, the proxy is wrong, or the router's certificate does not
 * chain to what the operators trust, the operators stay unavailable, `health` is not done, and it
 * names the endpoint that fails and why.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startDnsmasq, type RunningDnsmasq } from '../helpers/dnsmasq.js';
import { opensslCa, opensslServing } from '../helpers/openssl.js';
import { agent, CLUSTER_PHASE, startFactory, storeSite, type ClusterEnv } from './env.js';
import { startApiServing, type ApiServing } from './models/apiserver-sni.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const SITE_APPS = 'apps.sno.store42.example.com';
const CONSOLE = `https://console-openshift-console.${SITE_APPS}`;
const OAUTH = `https://oauth-openshift.${SITE_APPS}/healthz`;

describe.skipIf(kubeSkipped)("route health through the cluster's DNS, proxy and trust", () => {
  // a loopback /24 of this run's own: the router, the cluster DNS, a dead proxy, a stranger
  const net = `127.${20 + Math.floor(Math.random() * 200)}.${Math.floor(Math.random() * 250)}`;
  const ROUTER = `${net}.1`;
  const NAMESERVER = `${net}.2`;
  const PROXY = `${net}.3`;
  const STRANGER = `${net}.4`;
  const work = mkdtempSync(path.join(tmpdir(), 'route-health-'));
  const dnsDir = path.join(work, 'dnsmasq.d');
  let dns: RunningDnsmasq;
  let env: ClusterEnv;
  let api: ApiServing;
  let kc: KubeConfig;
  let root: string;

  /** The cluster DNS's upstream answers these domains with these addresses, and nothing else. */
  async function clusterDns(records: Record<string, string>): Promise<void> {
    await dns?.stop();
    writeFileSync(
      path.join(dnsDir, 'site.conf'),
      Object.entries(records)
        .map(([domain, address]) => `address=/${domain}/${address}\n`)
        .join(''),
    );
    dns = await startDnsmasq(dnsDir, NAMESERVER);
  }

  const operator = async (name: string) =>
    (
      (await kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({
        group: 'config.openshift.io',
        version: 'v1',
        plural: 'clusteroperators',
        name,
      })) as { status: { conditions: { type: string; status: string; message?: string }[] } }
    ).status.conditions;

  /** health alone, bounded: the error it ends with, or 'done' */
  async function health(timeoutSeconds: number): Promise<string> {
    const a = await agent(env, storeSite(), root, undefined, {
      healthTimeoutSeconds: timeoutSeconds,
      healthStableSeconds: 1,
    });
    return a.run(['health']).then(
      (state) => state.result,
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
  }

  beforeAll(async () => {
    mkdirSync(dnsDir);
    await clusterDns({ 'sno.factory.example.com': ROUTER });
    env = await startFactory({ routeHealth: { address: ROUTER, nameservers: [NAMESERVER] } });
    kc = env.cluster.kubeConfig();
    // the API server answers the site's API name where it resolves, by SNI
    api = await startApiServing(kc, ROUTER);
    root = mkdtempSync(path.join(tmpdir(), 'route-health-root-'));
    mkdirSync(path.join(root, 'etc'), { recursive: true });
    // the node's resolv.conf: the cluster DNS forwards to these
    writeFileSync(path.join(root, 'etc/resolv.conf'), `nameserver ${NAMESERVER}\n`);
  }, 300_000);
  afterAll(async () => {
    await api?.close();
    await env?.stop();
    await dns?.stop();
  });

  it('at the factory both operators reach their routes and are Available', async () => {
    await env.models!.settled();
    expect(await operator('console')).toContainEqual(expect.objectContaining({ type: 'Available', status: 'True' }));
    expect(await operator('authentication')).toContainEqual(
      expect.objectContaining({ type: 'Available', status: 'True' }),
    );
  });

  it("is not done while the site's names do not resolve inside the cluster, and names console and OAuth", async () => {
    const a = await agent(env, storeSite(), root);
    expect((await a.run(CLUSTER_PHASE)).result).toBe('succeeded');
    await env.models!.settled();
    // the operators, as upstream: console not Available, authentication Degraded
    expect(await operator('console')).toContainEqual(
      expect.objectContaining({ type: 'Available', status: 'False', reason: 'RouteHealth_FailedGet' }),
    );
    expect(await operator('authentication')).toContainEqual(
      expect.objectContaining({ type: 'Degraded', status: 'True' }),
    );
    const said = await health(15);
    expect(said).toContain(
      `console: ${CONSOLE}: console-openshift-console.${SITE_APPS} does not resolve through the cluster's DNS (${NAMESERVER}`,
    );
    expect(said).toContain(
      `authentication: ${OAUTH}: oauth-openshift.${SITE_APPS} does not resolve through the cluster's DNS`,
    );
  }, 300_000);

  it('is done once the cluster DNS resolves them to the router', async () => {
    await clusterDns({ 'sno.factory.example.com': ROUTER, 'sno.store42.example.com': ROUTER });
    expect(await health(60)).toBe('succeeded');
    expect(await operator('console')).toContainEqual(expect.objectContaining({ type: 'Available', status: 'True' }));
  }, 120_000);

  it('names the proxy the operators are given when it does not answer', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    // the admin's proxy.config spec; the network operator model publishes it in the status the
    // other operators read, with the cluster's own names added to noProxy
    const proxySpec = (spec: object) =>
      custom.patchClusterCustomObject(
        { group: 'config.openshift.io', version: 'v1', plural: 'proxies', name: 'cluster', body: { spec } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    // the apps domain is not in noProxy, so the operators go through the proxy
    await proxySpec({ httpsProxy: `http://${PROXY}:3128` });
    try {
      // the operators have seen the proxy: health then reads their verdict, not the one before it
      await env.models!.settled();
      expect(await operator('console')).toContainEqual(expect.objectContaining({ type: 'Available', status: 'False' }));
      const said = await health(15);
      expect(said).toContain(`console: ${CONSOLE}: the proxy http://${PROXY}:3128: ECONNREFUSED`);
      // the apps domain in noProxy: the operators go direct again
      await proxySpec({ noProxy: `.${SITE_APPS}` });
      expect(await health(60)).toBe('succeeded');
    } finally {
      await proxySpec({ httpsProxy: null, noProxy: null });
    }
  }, 180_000);

  it("names the endpoint and the certificate when the router serves one the site's CA did not issue", async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const ref = { namespace: 'openshift-config', name: 'sno-relocate-console' };
    const kept = (await core.readNamespacedSecret(ref)).data!;
    // the console's componentRoute secret replaced by a pair of another CA: the console operator
    // puts it on its route and the router serves it, though the Secret still looks like a serving pair
    const pair = opensslServing(work, 'wrong-console', opensslCa(work, 'not-the-site-ca'), `DNS:*.${SITE_APPS}`);
    const data = {
      'tls.crt': readFileSync(pair.crt).toString('base64'),
      'tls.key': readFileSync(pair.key).toString('base64'),
    };
    await core.patchNamespacedSecret(
      { ...ref, body: { data } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    try {
      // the operators have seen it: health then reads the served certificate, not the one before it
      await env.models!.settled();
      expect(await health(15)).toMatch(
        new RegExp(
          `console-openshift-console\\.${SITE_APPS.replace(/\./g, '\\.')} at ${ROUTER.replace(/\./g, '\\.')}:443 served CN=wrong-console \\(issued by CN=not-the-site-ca, serial [0-9A-F]+, valid until [^)]+\\), which does not verify with the site's CAs: its issuer CN=not-the-site-ca is not among the site's CAs, nor served after it`,
        ),
      );
    } finally {
      await core.patchNamespacedSecret(
        { ...ref, body: { data: kept } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await env.models!.settled();
    }
    expect(await health(60)).toBe('succeeded');
  }, 180_000);

  it("names the certificate when the names lead to a server whose certificate does not chain to the operators' trust", async () => {
    // another device answers for the site's apps names with a certificate of its own CA
    const ca = opensslCa(work, 'someone-elses-ca');
    const pair = opensslServing(work, 'stranger', ca, `DNS:*.${SITE_APPS}`);
    const stranger = https.createServer({ cert: readFileSync(pair.crt), key: readFileSync(pair.key) }, (_, res) =>
      res.writeHead(200).end(),
    );
    await new Promise<void>((resolve) => stranger.listen(443, STRANGER, resolve));
    try {
      await clusterDns({ 'sno.factory.example.com': ROUTER, 'sno.store42.example.com': STRANGER });
      // the operators have fetched through the new answer: health then reads their verdict, not
      // the one before it
      await vi.waitFor(
        async () => {
          expect(await operator('console')).toContainEqual(
            expect.objectContaining({ type: 'Available', status: 'False' }),
          );
          expect(await operator('authentication')).toContainEqual(
            expect.objectContaining({ type: 'Degraded', status: 'True' }),
          );
        },
        { timeout: 60_000, interval: 500 },
      );
      const said = await health(15);
      expect(said).toContain(
        `console: ${CONSOLE}: the certificate served (stranger) does not chain to a CA the operator trusts`,
      );
      expect(said).toContain(`authentication: ${OAUTH}: the certificate served (stranger) does not chain`);
      // the domain step on a node that has yet to store its certificates (a state folder of its
      // own): once stored, it is not done while its names serve another certificate
      const fresh = mkdtempSync(path.join(tmpdir(), 'route-health-fresh-'));
      mkdirSync(path.join(fresh, 'etc'));
      writeFileSync(path.join(fresh, 'etc/resolv.conf'), `nameserver ${NAMESERVER}\n`);
      const domain = await agent(env, storeSite(), fresh, undefined, { healthTimeoutSeconds: 5 });
      await expect(domain.run(['domain'])).rejects.toThrow(
        new RegExp(
          `domain: the site's names do not serve the site's certificates after 5s: .*oauth-openshift\\.${SITE_APPS.replace(/\./g, '\\.')} at ${STRANGER.replace(/\./g, '\\.')}:443 served CN=stranger \\(issued by CN=someone-elses-ca`,
        ),
      );
    } finally {
      stranger.closeAllConnections();
      await new Promise<void>((resolve) => stranger.close(() => resolve()));
      await clusterDns({ 'sno.factory.example.com': ROUTER, 'sno.store42.example.com': ROUTER });
    }
  }, 120_000);
});
