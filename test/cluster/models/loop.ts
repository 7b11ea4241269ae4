/**
 * What every model shares: a reconcile loop (as an operator's resync), typed access to the objects
 * the models read and write, and conditions as OpenShift writes them. A failed pass (the test API
 * restarting) is simply tried again on the next tick, as a controller's work queue does.
 */
import { ApiException, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';

export interface Model {
  name: string;
  /** passes that failed, e.g. while the API restarted; the last error is kept for debugging */
  failures: number;
  /** passes that completed */
  passes: number;
  lastError?: unknown;
  /** whether it has work under way (a render waiting out its delay, a rollout, an installer) */
  busy?(): boolean;
  stop(): Promise<void>;
}

/** Runs `reconcile` every `intervalMs` until stopped; stop() waits for the pass in flight. */
export function startLoop(name: string, intervalMs: number, reconcile: () => Promise<void>): Model {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const model: Model = {
    name,
    failures: 0,
    passes: 0,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
  const tick = () => {
    running = reconcile()
      .then(() => {
        model.passes++;
      })
      .catch((err: unknown) => {
        model.failures++;
        model.lastError = err;
      })
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return model;
}

export interface Gvr {
  group: string;
  version: string;
  plural: string;
}
export const ROUTES: Gvr = { group: 'route.openshift.io', version: 'v1', plural: 'routes' };
export const INGRESS_CONFIG: Gvr = { group: 'config.openshift.io', version: 'v1', plural: 'ingresses' };
export const APISERVER_CONFIG: Gvr = { group: 'config.openshift.io', version: 'v1', plural: 'apiservers' };
export const CLUSTER_OPERATORS: Gvr = { group: 'config.openshift.io', version: 'v1', plural: 'clusteroperators' };
export const INGRESS_CONTROLLERS: Gvr = { group: 'operator.openshift.io', version: 'v1', plural: 'ingresscontrollers' };
export const PROXIES: Gvr = { group: 'config.openshift.io', version: 'v1', plural: 'proxies' };
export const KUBE_APISERVERS: Gvr = { group: 'operator.openshift.io', version: 'v1', plural: 'kubeapiservers' };

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface RouteObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    creationTimestamp?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    resourceVersion?: string;
  };
  spec: {
    host?: string;
    subdomain?: string;
    path?: string;
    wildcardPolicy?: string;
    tls?: Record<string, unknown>;
    [field: string]: unknown;
  };
  status?: { ingress?: { host?: string; routerName?: string; conditions?: Condition[] }[] };
}

export interface IngressConfigObject {
  spec: {
    domain: string;
    appsDomain?: string;
    componentRoutes?: {
      namespace: string;
      name: string;
      hostname: string;
      servingCertKeyPairSecret?: { name: string };
    }[];
  };
  status?: Record<string, unknown>;
}

export const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** The condition list with `c` set; lastTransitionTime moves only when the status does. */
export function setCondition(conditions: readonly Condition[] | undefined, c: Condition): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((x) => x.type === c.type);
  const old = i >= 0 ? list[i] : undefined;
  const next = { ...c, lastTransitionTime: old?.status === c.status ? old.lastTransitionTime : now() };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

export const isNotFound = (e: unknown): boolean => e instanceof ApiException && e.code === 404;

/** The clients a model uses, made from the test cluster's kubeconfig. */
export function clients(kc: KubeConfig): { custom: CustomObjectsApi; core: CoreV1Api } {
  return { custom: kc.makeApiClient(CustomObjectsApi), core: kc.makeApiClient(CoreV1Api) };
}

export async function listRoutes(custom: CustomObjectsApi, namespace?: string): Promise<RouteObject[]> {
  const list = (
    namespace
      ? await custom.listNamespacedCustomObject({ ...ROUTES, namespace })
      : await custom.listClusterCustomObject(ROUTES)
  ) as { items: RouteObject[] };
  return list.items;
}

export async function readIngressConfig(custom: CustomObjectsApi): Promise<IngressConfigObject> {
  return (await custom.getClusterCustomObject({ ...INGRESS_CONFIG, name: 'cluster' })) as IngressConfigObject;
}

/** Sets one ClusterOperator condition (status subresource), as the operator's status controller does. */
export async function setOperatorCondition(custom: CustomObjectsApi, name: string, c: Condition): Promise<void> {
  const co = (await custom.getClusterCustomObject({ ...CLUSTER_OPERATORS, name })) as {
    status?: { conditions?: Condition[] };
  };
  const current = co.status?.conditions?.find((x) => x.type === c.type);
  if (current?.status === c.status && current.reason === c.reason && current.message === c.message) return;
  const conditions = setCondition(co.status?.conditions, c);
  await custom.patchClusterCustomObjectStatus({
    ...CLUSTER_OPERATORS,
    name,
    body: [{ op: 'replace', path: '/status/conditions', value: conditions }],
  });
}

export interface ProxyFields {
  httpProxy?: string;
  httpsProxy?: string;
  noProxy?: string;
}

/** proxy.config/cluster's status, as the network operator publishes it (network-operator.ts). */
export async function proxyStatus(custom: CustomObjectsApi): Promise<ProxyFields> {
  try {
    const proxy = (await custom.getClusterCustomObject({ ...PROXIES, name: 'cluster' })) as { status?: ProxyFields };
    return proxy.status ?? {};
  } catch (e) {
    if (isNotFound(e)) return {};
    throw e;
  }
}
