/**
 * The platform Prometheus's way to the watcher's metrics (docs/metrics-and-alerts.md): the Service
 * that monitoring/sno-relocate-scrape.yaml ships has no selector, so its Endpoints are the
 * watcher's to keep: the node's InternalIP, as the Node lists it first (the address the pod network
 * reaches the node at), and the port the metrics are served on. They are written when the watcher
 * starts, again as soon as anyone changes or deletes them (a watch on that one object), and at each
 * re-list of that watch, which also follows a Node whose address changed.
 *
 * Only a watcher serving beyond loopback keeps them: Endpoints naming an address nothing listens on
 * would only make the target look down.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from '../log/logger.js';
import type { Kube, KubeObject, ListWatch, ResourcePath } from '../ports/kube.js';

export const SCRAPE_NAMESPACE = 'sno-relocate';
/** the Service, its Endpoints and the ServiceMonitor share this name */
export const SCRAPE_NAME = 'sno-relocate-watch';
/** the port's name the ServiceMonitor's endpoint selects */
export const SCRAPE_PORT = 'metrics';
/** how long a watch on the Endpoints runs before it is listed again (and the Node read again) */
const RELIST_SECONDS = 300;
/** after a failure (the API away, the manifests not installed yet), the next try */
const RETRY_MS = 10_000;

const ENDPOINTS: ResourcePath = {
  group: '',
  version: 'v1',
  plural: 'endpoints',
  fieldSelector: `metadata.namespace=${SCRAPE_NAMESPACE},metadata.name=${SCRAPE_NAME}`,
};

interface Subset {
  addresses: { ip: string; nodeName?: string }[];
  ports: { name: string; port: number; protocol: 'TCP' }[];
}
interface Endpoints extends KubeObject {
  subsets?: Subset[];
}
interface NodeObject extends KubeObject {
  status?: { addresses?: { type: string; address: string }[] };
}

/** Whether a listen host serves only this machine. */
export const isLoopback = (host: string): boolean => host === 'localhost' || /^127\./.test(host) || host === '::1';

/** The subsets that point at `ip`:`port` on the node named. */
export const scrapeSubsets = (node: string, ip: string, port: number): Subset[] => [
  { addresses: [{ ip, nodeName: node }], ports: [{ name: SCRAPE_PORT, port, protocol: 'TCP' }] },
];

export class EndpointsKeeper {
  private stopped = false;
  private watch: AbortController | undefined;
  private wake: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private warned = '';

  constructor(
    private readonly kube: Kube,
    private readonly api: ListWatch,
    private readonly port: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watch?.abort();
    this.wake?.();
    await this.running;
  }

  /** Writes the Endpoints unless they already point at the node's InternalIP and the port. */
  async ensure(): Promise<void> {
    const [node] = await this.kube.list<NodeObject>('v1', 'Node');
    const ip = node?.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    if (!node || ip === undefined) throw new Error('no Node with an InternalIP to point the metrics Endpoints at');
    const subsets = scrapeSubsets(node.metadata.name, ip, this.port);
    const ref = { apiVersion: 'v1', kind: 'Endpoints', namespace: SCRAPE_NAMESPACE, name: SCRAPE_NAME };
    const current = await this.kube.get<Endpoints>(ref);
    if (current && isDeepStrictEqual(current.subsets, subsets)) return;
    await this.kube.apply<Endpoints>(
      {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name: SCRAPE_NAME, namespace: SCRAPE_NAMESPACE, labels: { 'app.kubernetes.io/name': SCRAPE_NAME } },
        subsets,
      },
      { force: true },
    );
    this.warned = '';
    this.log.info(
      { endpoints: `${SCRAPE_NAMESPACE}/${SCRAPE_NAME}`, address: `${ip}:${this.port}` },
      `metrics Endpoints ${SCRAPE_NAMESPACE}/${SCRAPE_NAME} point at ${ip}:${this.port}`,
    );
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.ensure();
        const { resourceVersion } = await this.api.listPage(ENDPOINTS, { limit: 1 });
        await this.watchUntilEnded(resourceVersion ?? '0');
      } catch (err) {
        // said once per cause, not at every retry
        const why = err instanceof Error ? err.message : String(err);
        if (why !== this.warned)
          this.log.warn(
            { err: why },
            `cannot keep the metrics Endpoints ${SCRAPE_NAMESPACE}/${SCRAPE_NAME} (are monitoring/sno-relocate-scrape.yaml's objects installed?): ${why}; trying again`,
          );
        this.warned = why;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          setTimeout(resolve, RETRY_MS).unref();
        });
      }
    }
  }

  /** Watches the Endpoints until the watch ends, writing them again on every change someone else made. */
  private async watchUntilEnded(resourceVersion: string): Promise<void> {
    if (this.stopped) return;
    const pending: Promise<void>[] = [];
    let failure: unknown;
    await new Promise<void>((resolve, reject) => {
      this.api
        .watch(
          ENDPOINTS,
          { resourceVersion, timeoutSeconds: RELIST_SECONDS },
          () => pending.push(this.ensure().catch((err: unknown) => void (failure ??= err))),
          () => resolve(),
        )
        .then((controller) => {
          this.watch = controller;
          if (this.stopped) controller.abort();
        }, reject);
    });
    await Promise.all(pending);
    if (failure !== undefined) throw failure;
  }
}
