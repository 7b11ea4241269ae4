/**
 * Seeds a test API with a "factory cluster": what a single-node OpenShift cluster holds after it was
 * installed and validated in the factory, before it is shipped to its site. Needs the test CRDs
 * (applyCrds); objects whose CRD is not served are left out and listed in `skipped`, so the same
 * seed models an old cluster without IDMS or a cluster without OLM.
 */
import { randomUUID } from 'node:crypto';
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import forge from 'node-forge';
import { createCsr, kubeletCsrSpecs, MACHINE_CONFIG_OPERATOR_NS, testKey } from './csr-requests.js';

export const FACTORY_CLUSTER_NAME = 'sno';
export const FACTORY_BASE_DOMAIN = 'factory.example.com';
export const FACTORY_APPS_DOMAIN = `apps.${FACTORY_CLUSTER_NAME}.${FACTORY_BASE_DOMAIN}`;
export const FACTORY_API_HOST = `api.${FACTORY_CLUSTER_NAME}.${FACTORY_BASE_DOMAIN}`;
/** The node's name as the kubelet registered it in the factory (its hostname then). */
export const FACTORY_NODE_NAME = 'sno-factory';
export const FACTORY_NODE_IP = '192.168.127.10';
/** A node that is not this one: its CSRs must never be approved by the agent. */
export const OTHER_NODE_NAME = 'intruder-node';
export const OTHER_NODE_IP = '192.168.127.99';
export const FACTORY_OCP_VERSION = '4.16.12';
export const FACTORY_RELEASE_IMAGE = 'quay.io/openshift-release-dev/ocp-release@sha256:' + 'a'.repeat(64);
export const FACTORY_REGISTRY = 'registry.factory.example.com:5000';
/** The namedCertificate in apiserver.config/cluster that the agent does not own. */
export const FOREIGN_CERT_NAMES = ['api.other.example.com'];
export const FOREIGN_CERT_SECRET = 'foreign-cert';
export const FACTORY_ICSP_NAME = 'factory-mirrors';
/** User routes with hosts outside the apps domain: the agent must leave them alone. */
export const CUSTOM_HOSTS = ['shop.example.net', 'www.shop.example.net'];

export const FACTORY_NAMESPACES = [
  'openshift-config',
  'openshift-config-managed',
  'openshift-console',
  'openshift-authentication',
  'openshift-ingress',
  'openshift-ingress-canary',
  'openshift-monitoring',
  'openshift-marketplace',
  MACHINE_CONFIG_OPERATOR_NS,
  'shop-app',
];

export interface SeedOptions {
  /** N more user routes under the old apps domain, spread over `ceil(N / 100)` namespaces (min 1, max 20). */
  extraRoutes?: number;
  /** Also give the extra routes a router status (one more write each); default false. */
  extraRouteStatus?: boolean;
  nodeName?: string;
  nodeIP?: string;
  otherNodeName?: string;
  /** The pending kubelet CSRs; default true. */
  csrs?: boolean;
  /** Parallel requests while seeding; default 16. */
  concurrency?: number;
}

export interface SeededRoute {
  namespace: string;
  name: string;
  host: string;
  /** An OpenShift component route (console, oauth, monitoring, canary) rather than a user's. */
  platform: boolean;
}

export interface FactoryCluster {
  kubeConfig: KubeConfig;
  domain: string;
  nodeName: string;
  nodeIP: string;
  otherNodeName: string;
  namespaces: string[];
  /** Every route seeded. */
  routes: SeededRoute[];
  /** Routes whose host is under the factory apps domain. */
  oldDomainRoutes: SeededRoute[];
  /** Routes with a custom host outside it. */
  customHostRoutes: SeededRoute[];
  /** CSR object names. */
  csrs: { nodeClient?: string; nodeServing?: string; otherNodeClient?: string };
  /** Objects not created because their CRD is not served, e.g. "imagecontentsourcepolicies/factory-mirrors". */
  skipped: string[];
  timings: { totalMs: number; routesMs: number };
}

interface Gvr {
  group: string;
  version: string;
  plural: string;
}
const ROUTE: Gvr = { group: 'route.openshift.io', version: 'v1', plural: 'routes' };
const INGRESS: Gvr = { group: 'config.openshift.io', version: 'v1', plural: 'ingresses' };
const APISERVER: Gvr = { group: 'config.openshift.io', version: 'v1', plural: 'apiservers' };
const CLUSTERVERSION: Gvr = { group: 'config.openshift.io', version: 'v1', plural: 'clusterversions' };
const CLUSTEROPERATOR: Gvr = { group: 'config.openshift.io', version: 'v1', plural: 'clusteroperators' };
const ICSP: Gvr = { group: 'operator.openshift.io', version: 'v1alpha1', plural: 'imagecontentsourcepolicies' };
const MCP: Gvr = { group: 'machineconfiguration.openshift.io', version: 'v1', plural: 'machineconfigpools' };

// ---------------------------------------------------------------------------------------------
// Certificates

let foreignCert: { cert: string; key: string } | undefined;
/** A self-signed serving certificate for FOREIGN_CERT_NAMES (someone else's certificate). */
export function foreignCertificate(): { cert: string; key: string } {
  if (!foreignCert) {
    const { privateKey, publicKey } = testKey();
    const cert = forge.pki.createCertificate();
    cert.publicKey = publicKey;
    cert.serialNumber = '0a1b2c3d';
    cert.validity.notBefore = new Date(Date.now() - 3600_000);
    cert.validity.notAfter = new Date(Date.now() + 365 * 86400_000);
    const subject = [{ name: 'commonName', value: FOREIGN_CERT_NAMES[0]! }];
    cert.setSubject(subject);
    cert.setIssuer(subject);
    cert.setExtensions([{ name: 'subjectAltName', altNames: FOREIGN_CERT_NAMES.map((value) => ({ type: 2, value })) }]);
    cert.sign(privateKey, forge.md.sha256.create());
    foreignCert = { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(privateKey) };
  }
  return foreignCert;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function isCode(e: unknown, code: number): boolean {
  return e instanceof ApiException && e.code === code;
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function inPool<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

function route(
  namespace: string,
  name: string,
  host: string,
  opts: { service?: string; tls?: Record<string, string>; path?: string; port?: string | number } = {},
): object {
  return {
    apiVersion: 'route.openshift.io/v1',
    kind: 'Route',
    metadata: { name, namespace, labels: { app: name } },
    spec: {
      host,
      ...(opts.path ? { path: opts.path } : {}),
      to: { kind: 'Service', name: opts.service ?? name, weight: 100 },
      ...(opts.port !== undefined ? { port: { targetPort: opts.port } } : {}),
      ...(opts.tls ? { tls: opts.tls } : {}),
      wildcardPolicy: 'None',
    },
  };
}

function routeStatus(host: string): object {
  return {
    ingress: [
      {
        host,
        routerName: 'default',
        routerCanonicalHostname: `router-default.${FACTORY_APPS_DOMAIN}`,
        wildcardPolicy: 'None',
        conditions: [
          { type: 'Admitted', status: 'True', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') },
        ],
      },
    ],
  };
}

function condition(type: string, status: string, reason = 'AsExpected', message = ''): object {
  return { type, status, reason, message, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
}

/** The platform routes of a 4.16 single-node cluster, with the hosts OpenShift gives them. */
function platformRoutes(domain: string): { ns: string; name: string; host: string; obj: object }[] {
  const r = (ns: string, name: string, host: string, opts: Parameters<typeof route>[3]) => ({
    ns,
    name,
    host,
    obj: route(ns, name, host, opts),
  });
  return [
    r('openshift-console', 'console', `console-openshift-console.${domain}`, {
      port: 'https',
      tls: { termination: 'reencrypt', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
    r('openshift-console', 'downloads', `downloads-openshift-console.${domain}`, {
      port: 'http',
      tls: { termination: 'edge', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
    r('openshift-authentication', 'oauth-openshift', `oauth-openshift.${domain}`, {
      port: 6443,
      tls: { termination: 'passthrough', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
    r('openshift-ingress-canary', 'canary', `canary-openshift-ingress-canary.${domain}`, {
      service: 'ingress-canary',
      port: '8080-tcp',
      tls: { termination: 'edge', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
    r('openshift-monitoring', 'prometheus-k8s', `prometheus-k8s-openshift-monitoring.${domain}`, {
      port: 'web',
      path: '/api',
      tls: { termination: 'reencrypt', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
    r('openshift-monitoring', 'prometheus-k8s-federate', `prometheus-k8s-federate-openshift-monitoring.${domain}`, {
      service: 'prometheus-k8s',
      port: 'web',
      path: '/federate',
      tls: { termination: 'reencrypt', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
    r('openshift-monitoring', 'alertmanager-main', `alertmanager-main-openshift-monitoring.${domain}`, {
      port: 'web',
      path: '/api',
      tls: { termination: 'reencrypt', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
    r('openshift-monitoring', 'thanos-querier', `thanos-querier-openshift-monitoring.${domain}`, {
      port: 'web',
      path: '/api',
      tls: { termination: 'reencrypt', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
    r('openshift-monitoring', 'grafana', `grafana-openshift-monitoring.${domain}`, {
      port: 'https',
      tls: { termination: 'reencrypt', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
  ];
}

/** The store's own applications: routes under the apps domain and routes with custom hosts. */
function userRoutes(domain: string): { ns: string; name: string; host: string; obj: object }[] {
  const r = (name: string, host: string, opts: Parameters<typeof route>[3]) => ({
    ns: 'shop-app',
    name,
    host,
    obj: route('shop-app', name, host, opts),
  });
  return [
    r('storefront', `storefront-shop-app.${domain}`, {
      port: 8080,
      tls: { termination: 'edge', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
    r('storefront-api', `storefront-shop-app.${domain}`, { service: 'api', port: 'http', path: '/api' }),
    r('inventory', `inventory-shop-app.${domain}`, { port: 'http' }),
    r('shop', CUSTOM_HOSTS[0]!, { service: 'storefront', port: 8080, tls: { termination: 'edge' } }),
    r('shop-www', CUSTOM_HOSTS[1]!, {
      service: 'storefront',
      port: 8080,
      tls: { termination: 'edge', insecureEdgeTerminationPolicy: 'Redirect' },
    }),
  ];
}

/**
 * Seeds the factory cluster. Creates; does not update: run it once against a fresh test API.
 */
export async function seedFactoryCluster(kubeconfigPath: string, opts: SeedOptions = {}): Promise<FactoryCluster> {
  const t0 = Date.now();
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const concurrency = opts.concurrency ?? 16;
  const nodeName = opts.nodeName ?? FACTORY_NODE_NAME;
  const nodeIP = opts.nodeIP ?? FACTORY_NODE_IP;
  const otherNodeName = opts.otherNodeName ?? OTHER_NODE_NAME;
  const domain = FACTORY_APPS_DOMAIN;
  const skipped: string[] = [];

  /** Creates a custom object (and its status when given); records it as skipped when its CRD is not served. */
  const createCustom = async (
    gvr: Gvr,
    obj: { metadata: { name: string; namespace?: string } } & Record<string, unknown>,
    status?: object,
  ): Promise<boolean> => {
    const { name, namespace } = obj.metadata;
    try {
      if (namespace) await custom.createNamespacedCustomObject({ ...gvr, namespace, body: obj });
      else await custom.createClusterCustomObject({ ...gvr, body: obj });
    } catch (e) {
      if (isCode(e, 404)) {
        skipped.push(`${gvr.plural}.${gvr.group}/${namespace ? `${namespace}/` : ''}${name}`);
        return false;
      }
      throw new Error(
        `creating ${gvr.plural}/${name}: ${e instanceof ApiException ? `HTTP ${e.code} ${JSON.stringify(e.body).slice(0, 400)}` : String(e)}`,
      );
    }
    if (status) {
      const body = [{ op: 'add', path: '/status', value: status }];
      if (namespace) await custom.patchNamespacedCustomObjectStatus({ ...gvr, namespace, name, body });
      else await custom.patchClusterCustomObjectStatus({ ...gvr, name, body });
    }
    return true;
  };

  // Namespaces (the extra-route ones too).
  const extra = Math.max(0, opts.extraRoutes ?? 0);
  const extraNsCount = extra === 0 ? 0 : Math.min(20, Math.max(1, Math.ceil(extra / 100)));
  const extraNamespaces = Array.from({ length: extraNsCount }, (_, i) => `store-app-${String(i).padStart(2, '0')}`);
  const namespaces = [...FACTORY_NAMESPACES, ...extraNamespaces];
  await inPool(namespaces, concurrency, async (name) => {
    await core.createNamespace({ body: { metadata: { name } } });
  });

  // The node as it registered in the factory.
  await core.createNode({
    body: {
      metadata: {
        name: nodeName,
        labels: {
          'kubernetes.io/hostname': nodeName,
          'node-role.kubernetes.io/master': '',
          'node-role.kubernetes.io/control-plane': '',
          'node-role.kubernetes.io/worker': '',
        },
      },
    },
  });

  // Cluster configuration singletons.
  await createCustom(
    INGRESS,
    { apiVersion: 'config.openshift.io/v1', kind: 'Ingress', metadata: { name: 'cluster' }, spec: { domain } },
    {
      defaultPlacement: 'ControlPlane',
      componentRoutes: [
        {
          name: 'console',
          namespace: 'openshift-console',
          defaultHostname: `console-openshift-console.${domain}`,
          currentHostnames: [`console-openshift-console.${domain}`],
        },
        {
          name: 'downloads',
          namespace: 'openshift-console',
          defaultHostname: `downloads-openshift-console.${domain}`,
          currentHostnames: [`downloads-openshift-console.${domain}`],
        },
        {
          name: 'oauth-openshift',
          namespace: 'openshift-authentication',
          defaultHostname: `oauth-openshift.${domain}`,
          currentHostnames: [`oauth-openshift.${domain}`],
        },
      ],
    },
  );
  const foreign = foreignCertificate();
  await core.createNamespacedSecret({
    namespace: 'openshift-config',
    body: {
      metadata: { name: FOREIGN_CERT_SECRET, namespace: 'openshift-config' },
      type: 'kubernetes.io/tls',
      data: {
        'tls.crt': Buffer.from(foreign.cert).toString('base64'),
        'tls.key': Buffer.from(foreign.key).toString('base64'),
      },
    },
  });
  await createCustom(APISERVER, {
    apiVersion: 'config.openshift.io/v1',
    kind: 'APIServer',
    metadata: { name: 'cluster' },
    spec: {
      audit: { profile: 'Default' },
      servingCerts: {
        namedCertificates: [{ names: [...FOREIGN_CERT_NAMES], servingCertificate: { name: FOREIGN_CERT_SECRET } }],
      },
    },
  });
  await createCustom(
    CLUSTERVERSION,
    {
      apiVersion: 'config.openshift.io/v1',
      kind: 'ClusterVersion',
      metadata: { name: 'version' },
      spec: { clusterID: randomUUID(), channel: 'stable-4.16' },
    },
    {
      desired: { version: FACTORY_OCP_VERSION, image: FACTORY_RELEASE_IMAGE },
      history: [
        {
          state: 'Completed',
          version: FACTORY_OCP_VERSION,
          image: FACTORY_RELEASE_IMAGE,
          verified: false,
          startedTime: '2025-01-01T00:00:00Z',
          completionTime: '2025-01-01T01:00:00Z',
        },
      ],
      observedGeneration: 1,
      versionHash: 'factory',
      availableUpdates: null,
      conditions: [
        condition('Available', 'True', 'AsExpected', `Done applying ${FACTORY_OCP_VERSION}`),
        condition('Progressing', 'False'),
        condition('Failing', 'False'),
      ],
    },
  );
  await inPool(
    [
      'authentication',
      'console',
      'ingress',
      'kube-apiserver',
      'machine-config',
      'monitoring',
      'openshift-apiserver',
      'marketplace',
    ],
    concurrency,
    async (name) => {
      await createCustom(
        CLUSTEROPERATOR,
        { apiVersion: 'config.openshift.io/v1', kind: 'ClusterOperator', metadata: { name }, spec: {} },
        {
          conditions: [
            condition('Available', 'True'),
            condition('Progressing', 'False'),
            condition('Degraded', 'False'),
          ],
          versions: [{ name: 'operator', version: FACTORY_OCP_VERSION }],
        },
      );
    },
  );
  await createCustom(
    MCP,
    {
      apiVersion: 'machineconfiguration.openshift.io/v1',
      kind: 'MachineConfigPool',
      metadata: { name: 'master' },
      spec: {
        machineConfigSelector: { matchLabels: { 'machineconfiguration.openshift.io/role': 'master' } },
        nodeSelector: { matchLabels: { 'node-role.kubernetes.io/master': '' } },
        paused: false,
        configuration: { name: 'rendered-master-factory' },
      },
    },
    {
      configuration: { name: 'rendered-master-factory' },
      conditions: [condition('Updated', 'True'), condition('Updating', 'False'), condition('Degraded', 'False')],
      machineCount: 1,
      readyMachineCount: 1,
      updatedMachineCount: 1,
      unavailableMachineCount: 0,
      degradedMachineCount: 0,
      observedGeneration: 1,
    },
  );

  // The factory's pull secret and mirror configuration.
  const dockerconfig = {
    auths: {
      'quay.io': { auth: Buffer.from('factory:factory-quay-token').toString('base64'), email: 'factory@example.com' },
      [FACTORY_REGISTRY]: { auth: Buffer.from('factory:factory-registry-token').toString('base64') },
    },
  };
  await core.createNamespacedSecret({
    namespace: 'openshift-config',
    body: {
      metadata: { name: 'pull-secret', namespace: 'openshift-config' },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': Buffer.from(JSON.stringify(dockerconfig)).toString('base64') },
    },
  });
  await createCustom(ICSP, {
    apiVersion: 'operator.openshift.io/v1alpha1',
    kind: 'ImageContentSourcePolicy',
    metadata: { name: FACTORY_ICSP_NAME },
    spec: {
      repositoryDigestMirrors: [
        { source: 'quay.io/openshift-release-dev/ocp-release', mirrors: [`${FACTORY_REGISTRY}/ocp/release`] },
        { source: 'quay.io/openshift-release-dev/ocp-v4.0-art-dev', mirrors: [`${FACTORY_REGISTRY}/ocp/release`] },
      ],
    },
  });

  // Routes.
  const tRoutes = Date.now();
  const routes: SeededRoute[] = [];
  const base = [
    ...platformRoutes(domain).map((r) => ({ ...r, platform: true })),
    ...userRoutes(domain).map((r) => ({ ...r, platform: false })),
  ];
  await inPool(base, concurrency, async (r) => {
    if (await createCustom(ROUTE, r.obj as never, routeStatus(r.host)))
      routes.push({ namespace: r.ns, name: r.name, host: r.host, platform: r.platform });
  });
  const extraRoutes = Array.from({ length: extra }, (_, i) => {
    const ns = extraNamespaces[i % extraNsCount]!;
    const name = `app-${String(i).padStart(4, '0')}`;
    const host = `${name}-${ns}.${domain}`;
    return {
      ns,
      name,
      host,
      obj: route(ns, name, host, {
        port: 8080,
        tls: i % 2 === 0 ? { termination: 'edge', insecureEdgeTerminationPolicy: 'Redirect' } : undefined,
      }),
    };
  });
  await inPool(extraRoutes, concurrency, async (r) => {
    if (await createCustom(ROUTE, r.obj as never, opts.extraRouteStatus ? routeStatus(r.host) : undefined)) {
      routes.push({ namespace: r.ns, name: r.name, host: r.host, platform: false });
    }
  });
  const routesMs = Date.now() - tRoutes;
  routes.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));

  // Pending kubelet CSRs: this node's client and serving requests, and another node's client request.
  const csrs: FactoryCluster['csrs'] = {};
  if (opts.csrs !== false) {
    // Who may send CSRs, as on OpenShift: the node-bootstrapper service account and the nodes.
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'system:node-bootstrapper' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node-bootstrapper' },
        subjects: [{ kind: 'ServiceAccount', name: 'node-bootstrapper', namespace: MACHINE_CONFIG_OPERATOR_NS }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'system:nodes-send-csrs' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node-bootstrapper' },
        subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:nodes' }],
      },
    });
    const mine = kubeletCsrSpecs(nodeName, nodeIP, 'factory');
    const other = kubeletCsrSpecs(otherNodeName, OTHER_NODE_IP, 'factory');
    [csrs.nodeClient, csrs.nodeServing, csrs.otherNodeClient] = await Promise.all([
      createCsr(kc, mine.client),
      createCsr(kc, mine.serving),
      createCsr(kc, other.client),
    ]);
  }

  return {
    kubeConfig: kc,
    domain,
    nodeName,
    nodeIP,
    otherNodeName,
    namespaces,
    routes,
    oldDomainRoutes: routes.filter((r) => r.host.endsWith(`.${domain}`)),
    customHostRoutes: routes.filter((r) => !r.host.endsWith(`.${domain}`)),
    csrs,
    skipped,
    timings: { totalMs: Date.now() - t0, routesMs },
  };
}
