/**
 * The openshift-apiserver and its operator on a single node (release-4.18; the same in 4.14 to 4.17):
 *
 * - the operator (openshift/cluster-openshift-apiserver-operator): routingConfig.subdomain is
 *   ingress.config's appsDomain when set, else its domain
 *   (pkg/operator/configobservation/ingresses/observe_ingresses.go:42-57); it goes into the ConfigMap
 *   openshift-apiserver/config, and the Deployment openshift-apiserver/apiserver's pod template carries
 *   that ConfigMap's hash (pkg/operator/workload/workload_openshiftapiserver_v311_00_sync.go:407-427;
 *   library-go's resourcehash, resource-hash.ts)
 *   and the hash of the trusted CA bundle (:407-427) and the proxy's environment (:396-403), so any of
 *   them rolls it out. One replica, maxSurge 0
 *   (bindata/v3.11.0/openshift-apiserver/deploy.yaml:19-20): the old pod first runs out its 50 s
 *   shutdown delay (bindata/v3.11.0/config/defaultconfig.yaml:21-22), still serving with its old
 *   configuration, then nothing serves until the new pod is ready. While it rolls out the
 *   ClusterOperator is Progressing, reason APIServerDeployment_PodsUpdating (library-go
 *   pkg/operator/apiserver/controller/workload/workload.go:292-306);
 * - the route API (openshift/openshift-apiserver pkg/route/apiserver/registry/route/strategy.go): a
 *   route created with neither host nor subdomain (and a wildcard policy other than Subdomain) gets
 *   `<name, dots replaced by dashes>-<namespace>.<subdomain of the pod that serves the create>` and
 *   the annotation openshift.io/host.generated=true (:112-117; library-go
 *   pkg/route/hostassignment/assignment.go AllocateHost and plugin.go); an update that clears the
 *   host keeps the old one ("Ignore attempts to clear the spec Host", :87-91). Upstream assigns inside
 *   the create; the test API has no such hook, so this model assigns right after the create. With no
 *   pod serving, route.openshift.io answers 503: when the routes are served by aggregation
 *   (test/kube/aggregated-routes.ts) the model stops that server meanwhile.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { AppsV1Api } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import type { AggregatedRoutes } from '../../kube/aggregated-routes.js';
import type { Ledger } from './ledger.js';
import {
  clients,
  isNotFound,
  listRoutes,
  PROXIES,
  proxyStatus,
  readIngressConfig,
  ROUTES,
  setOperatorCondition,
  startLoop,
  type Model,
} from './loop.js';
import { configMapHashAnnotation, getConfigMapHash } from './resource-hash.js';
import { SingleReplicaRollout, type RolloutTimes } from './rollout.js';

export const HOST_GENERATED_ANNOTATION = 'openshift.io/host.generated';
const NAMESPACE = 'openshift-apiserver';
const CONFIG_HASH_ANNOTATION = configMapHashAnnotation(NAMESPACE, 'config');

export interface OpenShiftApiServerOptions {
  /** the rollout's two parts (durations.ts) */
  times: RolloutTimes;
  /** the aggregated route server, stopped while no pod serves */
  routes?: AggregatedRoutes;
  ledger?: Ledger;
  intervalMs?: number;
}

export function startOpenShiftApiServer(kc: KubeConfig, opts: OpenShiftApiServerOptions): Model {
  const { custom, core } = clients(kc);
  const apps = kc.makeApiClient(AppsV1Api);
  const rollout = new SingleReplicaRollout('openshift-apiserver', opts.times, opts.ledger);
  /** the subdomain of the pod that serves, by the template it was made from */
  const subdomainOf = new Map<string, string>();
  let serving: string | undefined;
  /** every route seen, by uid, with its host: a host is generated on create only */
  const seen = new Map<string, string | undefined>();

  let namespaced = false;
  /** whether the model stopped the aggregated route server */
  let stopped = false;
  let statusWritten: unknown;

  async function ensureObjects(data: Record<string, string>, hash: string, env: { name: string; value: string }[]) {
    if (!namespaced)
      try {
        await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
      } catch (e) {
        if (!(e instanceof Error && 'code' in e && e.code === 409)) throw e;
      }
    namespaced = true;
    try {
      const cm = await core.readNamespacedConfigMap({ namespace: NAMESPACE, name: 'config' });
      if (!isDeepStrictEqual(cm.data, data))
        await core.replaceNamespacedConfigMap({ namespace: NAMESPACE, name: 'config', body: { ...cm, data } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
      await core.createNamespacedConfigMap({ namespace: NAMESPACE, body: { metadata: { name: 'config' }, data } });
    }
    const template = {
      metadata: { labels: { app: 'openshift-apiserver' }, annotations: { [CONFIG_HASH_ANNOTATION]: hash } },
      spec: { containers: [{ name: 'openshift-apiserver', image: 'openshift-apiserver', env }] },
    };
    try {
      const d = await apps.readNamespacedDeployment({ namespace: NAMESPACE, name: 'apiserver' });
      if (
        d.spec?.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] !== hash ||
        !isDeepStrictEqual(d.spec?.template.spec?.containers[0]?.env ?? [], env)
      )
        return await apps.replaceNamespacedDeployment({
          namespace: NAMESPACE,
          name: 'apiserver',
          body: { ...d, spec: { ...d.spec!, template } },
        });
      return d;
    } catch (e) {
      if (!isNotFound(e)) throw e;
      return apps.createNamespacedDeployment({
        namespace: NAMESPACE,
        body: {
          metadata: { name: 'apiserver', namespace: NAMESPACE },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: 'openshift-apiserver' } },
            strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } },
            template,
          },
        },
      });
    }
  }

  const model = startLoop('openshift-apiserver', opts.intervalMs ?? 200, async () => {
    const ingress = await readIngressConfig(custom);
    const subdomain = ingress.spec.appsDomain || ingress.spec.domain;
    const proxy = await proxyStatus(custom);
    const trusted = await trustedBundle();
    const env = (
      [
        ['HTTPS_PROXY', proxy.httpsProxy],
        ['HTTP_PROXY', proxy.httpProxy],
        ['NO_PROXY', proxy.noProxy],
      ] as const
    ).flatMap(([name, value]) => (value ? [{ name, value }] : []));
    const data = {
      'config.yaml': JSON.stringify({
        apiVersion: 'openshiftcontrolplane.config.openshift.io/v1',
        kind: 'OpenShiftAPIServerConfig',
        routingConfig: { subdomain },
      }),
    };
    const hash = getConfigMapHash(data);
    const deployment = await ensureObjects(data, hash, env);
    const template = `${hash} ${JSON.stringify(env)} ${trusted}`;
    subdomainOf.set(template, subdomain);
    const phase = rollout.want(template, `routingConfig.subdomain ${subdomain}, proxy ${JSON.stringify(env)}`);
    if (phase === 'serving') serving = template;
    const status = {
      observedGeneration: deployment.metadata?.generation ?? 1,
      replicas: 1,
      updatedReplicas: phase === 'old pod shutting down' ? 0 : 1,
      availableReplicas: phase === 'no pod' ? 0 : 1,
      readyReplicas: phase === 'no pod' ? 0 : 1,
      ...(phase === 'no pod' && { unavailableReplicas: 1 }),
    };
    if (!isDeepStrictEqual(status, statusWritten)) {
      await apps.replaceNamespacedDeploymentStatus({
        namespace: NAMESPACE,
        name: 'apiserver',
        body: { ...deployment, status },
      });
      statusWritten = status;
    }
    await setOperatorCondition(custom, 'openshift-apiserver', {
      type: 'Progressing',
      status: phase === 'serving' ? 'False' : 'True',
      reason: phase === 'serving' ? 'AsExpected' : 'APIServerDeployment_PodsUpdating',
      message:
        phase === 'serving'
          ? ''
          : `APIServerDeploymentProgressing: deployment/apiserver.openshift-apiserver: ${phase === 'no pod' ? 1 : 0}/1 pods have been updated to the latest generation and ${phase === 'no pod' ? 0 : 1}/1 pods are available`,
    });
    // only what it stopped itself: a test may stop the server for a fault of its own
    if (opts.routes && phase === 'no pod' && opts.routes.serving()) {
      await opts.routes.stop();
      stopped = true;
    }
    if (opts.routes && phase !== 'no pod' && stopped) {
      await opts.routes.start();
      stopped = false;
    }
    if (phase === 'no pod') return;
    await generateHosts(subdomainOf.get(serving!) ?? subdomain);
  });
  return Object.assign(model, { busy: () => rollout.rolling });

  /**
   * The trusted-ca-bundle ConfigMap's contents, whose hash the pod template carries too (:414): the
   * network operator injects into it the system bundle and the proxy's trustedCA ConfigMap, so the
   * latter's contents stand for it here.
   */
  async function trustedBundle(): Promise<string> {
    const spec = (
      (await custom.getClusterCustomObject({ ...PROXIES, name: 'cluster' })) as {
        spec?: { trustedCA?: { name?: string } };
      }
    ).spec;
    const name = spec?.trustedCA?.name;
    if (!name) return '';
    try {
      return (
        (await core.readNamespacedConfigMap({ namespace: 'openshift-config', name })).data?.['ca-bundle.crt'] ?? ''
      );
    } catch (e) {
      if (isNotFound(e)) return '';
      throw e;
    }
  }

  async function generateHosts(suffix: string): Promise<void> {
    for (const route of await listRoutes(custom)) {
      const uid = (route.metadata as { uid?: string }).uid!;
      const before = seen.get(uid);
      const known = seen.has(uid);
      if (route.spec.host || route.spec.subdomain || route.spec.wildcardPolicy === 'Subdomain') {
        seen.set(uid, route.spec.host);
        continue;
      }
      // an update that cleared the host keeps the old one; only a create generates one
      const host = known ? before : `${route.metadata.name.replace(/\./g, '-')}-${route.metadata.namespace}.${suffix}`;
      if (!host) continue;
      await custom.replaceNamespacedCustomObject({
        ...ROUTES,
        namespace: route.metadata.namespace,
        name: route.metadata.name,
        body: {
          ...route,
          metadata: {
            ...route.metadata,
            annotations: { ...route.metadata.annotations, ...(!known && { [HOST_GENERATED_ANNOTATION]: 'true' }) },
          },
          spec: { ...route.spec, host },
        },
      });
      seen.set(uid, host);
    }
  }
}
