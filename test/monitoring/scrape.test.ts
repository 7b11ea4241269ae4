/**
 * The platform Prometheus's path to the watcher's metrics, end to end: the real `sno-relocate
 * watch` process against a real kube-apiserver keeps the Endpoints of the shipped Service
 * (monitoring/sno-relocate-scrape.yaml) pointing at the node's InternalIP and its metrics port, and
 * a real Prometheus, configured from the shipped ServiceMonitor as the Prometheus Operator
 * configures the platform's (the Service's Endpoints, found by its labels and the endpoint's port
 * name), finds the watcher there, scrapes it, and fires and clears an alert of
 * the shipped rules.
 *
 * The Node's InternalIP is this machine's own address: the Endpoints API refuses loopback ones,
 * and the watcher listens on every address, as its unit has it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SliStore } from '../../src/engine/sli.js';
import { createRootFs } from '../../src/ports/fs.js';
import { SCRAPE_NAME, SCRAPE_NAMESPACE, SCRAPE_PORT } from '../../src/watch/scrape-endpoints.js';
import { freeTcpPort } from '../helpers/ports.js';
import { startCluster, type TestCluster } from '../kube/cluster.js';
import { startWatch, type WatchProcess } from '../watch/process.js';
import { failedThenSucceeded, type PrometheusServer, REPO, startPrometheus } from './prometheus-server.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const NODE = 'sno-store42';
const STATE_DIR = '/var/lib/sno-relocate';
const hostIp = Object.values(networkInterfaces())
  .flat()
  .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;

interface ServiceMonitor extends KubernetesObject {
  spec: {
    selector: { matchLabels: Record<string, string> };
    namespaceSelector: { matchNames: string[] };
    endpoints: { port: string; path: string; scheme: string }[];
  };
}

const shipped = (file: string) =>
  yaml.loadAll(readFileSync(path.join(REPO, 'monitoring', file), 'utf8')) as KubernetesObject[];
const SCRAPE_OBJECTS = shipped('sno-relocate-scrape.yaml');
const SERVICE_MONITOR = SCRAPE_OBJECTS.find((o) => o.kind === 'ServiceMonitor') as ServiceMonitor;

/**
 * The targets the Prometheus Operator's scrape job for a ServiceMonitor's endpoint finds (its
 * pkg/prometheus/promcfg.go generateServiceMonitorConfig: Endpoints discovery in the selected
 * namespaces, kept by the Service's labels and the endpoint's port name, labelled with the
 * namespace, the Service and the job), read from the API at each refresh. Debian's prometheus is
 * built without Kubernetes discovery, so this stands in for it as an HTTP service discovery
 * Prometheus asks every second.
 */
async function serveDiscovery(monitor: ServiceMonitor, core: CoreV1Api): Promise<{ url: string; close(): void }> {
  const { matchLabels } = monitor.spec.selector;
  const endpoint = monitor.spec.endpoints[0]!;
  const targets = async () => {
    const groups: { targets: string[]; labels: Record<string, string> }[] = [];
    for (const namespace of monitor.spec.namespaceSelector.matchNames) {
      const labelSelector = Object.entries(matchLabels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      for (const service of (await core.listNamespacedService({ namespace, labelSelector })).items) {
        const name = service.metadata!.name!;
        const found = await core.readNamespacedEndpoints({ namespace, name }).catch(() => undefined);
        for (const subset of found?.subsets ?? [])
          for (const p of (subset.ports ?? []).filter((x) => x.name === endpoint.port))
            groups.push({
              targets: (subset.addresses ?? []).map((a) => `${a.ip}:${p.port}`),
              labels: {
                namespace,
                service: name,
                job: name,
                __metrics_path__: endpoint.path,
                __scheme__: endpoint.scheme,
              },
            });
      }
    }
    return groups;
  };
  const server = http.createServer((_req, res) => {
    targets().then(
      (groups) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(groups)),
      (err: Error) => res.writeHead(500).end(err.message),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => void server.close() };
}

/** The job the operator names after the ServiceMonitor, its targets discovered as above. */
const scrapeJobOf = (monitor: ServiceMonitor, discovery: string) => ({
  job_name: `serviceMonitor/${monitor.metadata!.namespace}/${monitor.metadata!.name}/0`,
  http_sd_configs: [{ url: discovery, refresh_interval: '1s' }],
});

describe.skipIf(kubeSkipped || hostIp === undefined)("the platform Prometheus's path to the watcher", () => {
  let cluster: TestCluster;
  let work: string;
  let port: number;
  let watcher: WatchProcess;
  let prometheus: PrometheusServer;
  let sli: SliStore;
  let discovery: Awaited<ReturnType<typeof serveDiscovery>> | undefined;
  const core = () => cluster.kubeConfig().makeApiClient(CoreV1Api);
  const endpoints = async () => {
    try {
      return await core().readNamespacedEndpoints({ namespace: SCRAPE_NAMESPACE, name: SCRAPE_NAME });
    } catch {
      return undefined;
    }
  };
  /** where the Endpoints point: ip:port (port name), or undefined while there are none */
  const target = async () => {
    const subset = (await endpoints())?.subsets?.[0];
    const address = subset?.addresses?.[0];
    const p = subset?.ports?.[0];
    return address && p ? `${address.ip}:${p.port} (${p.name}) on ${address.nodeName}` : undefined;
  };

  beforeAll(async () => {
    cluster = await startCluster();
    work = mkdtempSync(path.join(tmpdir(), 'scrape-'));
    const objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig());
    // the shipped objects the API serves without the monitoring CRDs: the namespace, Service and Role
    const installed = [...shipped('sno-relocate-rules.yaml'), ...SCRAPE_OBJECTS].filter(
      (o) => !o.apiVersion!.startsWith('monitoring.coreos.com/'),
    );
    for (const o of installed) await objects.create(o);
    await core().createNode({ body: { metadata: { name: NODE } } });
    await core().patchNodeStatus({
      name: NODE,
      body: [{ op: 'add', path: '/status', value: { addresses: [{ type: 'InternalIP', address: hostIp }] } }],
    });
    const root = path.join(work, 'node');
    mkdirSync(root);
    sli = new SliStore(createRootFs(root), STATE_DIR);
    const t0 = new Date(Date.now() - 3_600_000);
    await sli.started(t0);
    await sli.finished({ result: 'succeeded', startedAt: t0, finishedAt: t0, durationSeconds: 600 });
    port = await freeTcpPort();
    watcher = startWatch([
      '--kubeconfig', cluster.kubeconfigPath, '--root', root, '--metrics-address', `0.0.0.0:${port}`,
    ]); // prettier-ignore
  }, 120_000);

  afterAll(async () => {
    prometheus?.stop();
    discovery?.close();
    await watcher?.stop();
    await core()
      .deleteNode({ name: NODE })
      .catch(() => undefined);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const until = async (what: string, check: () => Promise<boolean>, ms = 30_000) => {
    const deadline = performance.now() + ms;
    while (!(await check())) {
      if (performance.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s\n${watcher.log()}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  it("points the Service's Endpoints at the node's InternalIP and the metrics port, and keeps them so", async () => {
    const want = `${hostIp}:${port} (${SCRAPE_PORT}) on ${NODE}`;
    await until('Endpoints written', async () => (await target()) === want);
    expect(watcher.log()).toContain(`metrics Endpoints ${SCRAPE_NAMESPACE}/${SCRAPE_NAME} point at ${hostIp}:${port}`);
    // someone points them elsewhere: put back
    await core().replaceNamespacedEndpoints({
      namespace: SCRAPE_NAMESPACE,
      name: SCRAPE_NAME,
      body: {
        ...(await endpoints())!,
        subsets: [{ addresses: [{ ip: '10.9.9.9' }], ports: [{ name: SCRAPE_PORT, port: 1 }] }],
      },
    });
    await until('Endpoints put back', async () => (await target()) === want);
    // deleted: made again
    await core().deleteNamespacedEndpoints({ namespace: SCRAPE_NAMESPACE, name: SCRAPE_NAME });
    await until('Endpoints made again', async () => (await target()) === want);
  });

  it('is scraped by a Prometheus configured from the shipped ServiceMonitor, and its alert fires and clears', async () => {
    discovery = await serveDiscovery(SERVICE_MONITOR, core());
    prometheus = await startPrometheus(work, [scrapeJobOf(SERVICE_MONITOR, discovery.url)]);
    await prometheus.until('the watcher scraped through its Endpoints', async () => {
      const body = (await (await fetch(`${prometheus.api}/api/v1/targets`)).json()) as {
        data: { activeTargets: { scrapeUrl: string; health: string; labels: Record<string, string> }[] };
      };
      return body.data.activeTargets.some(
        (t) =>
          t.scrapeUrl === `http://${hostIp}:${port}/metrics` &&
          t.health === 'up' &&
          t.labels.service === SCRAPE_NAME &&
          t.labels.namespace === SCRAPE_NAMESPACE,
      );
    });
    const run = failedThenSucceeded(sli);
    const alert = await prometheus.firesAndClears('SnoRelocateRunFailed', run.fail, run.recover);
    expect(alert.labels).toMatchObject({ severity: 'critical', namespace: SCRAPE_NAMESPACE, service: SCRAPE_NAME });
  });
});
