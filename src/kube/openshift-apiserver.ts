/**
 * Whether the openshift-apiserver runs the site's apps domain yet. After ingress.config's appsDomain
 * changes, its operator writes routingConfig.subdomain into openshift-apiserver/config
 * (cluster-openshift-apiserver-operator pkg/operator/configobservation/ingresses/observe_ingresses.go:42-57)
 * and rolls the Deployment openshift-apiserver/apiserver out, its pod template annotated with a hash
 * of that ConfigMap (pkg/operator/workload/workload_openshiftapiserver_v311_00_sync.go:407-427). Until
 * the new pod is ready the old one keeps generating route hosts under the old domain, then route.openshift.io
 * answers 503; a host is generated only when a route is created (openshift-apiserver
 * pkg/route/apiserver/registry/route/strategy.go:112-117). So a Route created before the rollout
 * is over can get a host under the factory's domain that nothing moves later.
 */
import yaml from 'js-yaml';
import type { Kube, KubeObject } from '../ports/kube.js';

export const OPENSHIFT_APISERVER_NAMESPACE = 'openshift-apiserver';
/** resourcehash's key for the ConfigMap `config` (library-go resourcehash/as_configmap.go:67-68) */
export const CONFIG_HASH_ANNOTATION = 'operator.openshift.io/dep-openshift-apiserver.config.configmap';

/** Go's encoding/json of a string, as json.Encoder writes it: HTML characters and U+2028/9 escaped. */
const goJsonString = (s: string) =>
  JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * library-go's GetConfigMapHash (resourcehash/as_configmap.go:20-26): FNV-1 32 over the ConfigMap's
 * data as json.Encoder writes it (keys sorted, a newline at the end), in URL-safe base64.
 */
export function configMapHash(data: Readonly<Record<string, string>>): string {
  const keys = Object.keys(data).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const json = `{${keys.map((k) => `${goJsonString(k)}:${goJsonString(data[k]!)}`).join(',')}}\n`;
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(json, 'utf8')) hash = (Math.imul(hash, 0x01000193) ^ byte) >>> 0;
  const out = Buffer.alloc(4);
  out.writeUInt32BE(hash);
  return out.toString('base64url') + '==';
}

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}
interface DeploymentObject extends KubeObject {
  metadata: KubeObject['metadata'] & { generation?: number };
  spec?: { replicas?: number; template?: { metadata?: { annotations?: Record<string, string> } } };
  status?: { observedGeneration?: number; updatedReplicas?: number; availableReplicas?: number };
}

/** What keeps the openshift-apiserver from generating hosts under `appsDomain`; empty once it does. */
export async function openshiftApiServerUnsettled(kube: Kube, appsDomain: string): Promise<string[]> {
  const ref = { namespace: OPENSHIFT_APISERVER_NAMESPACE };
  const config = await kube.get<ConfigMapObject>({ apiVersion: 'v1', kind: 'ConfigMap', name: 'config', ...ref });
  const deployment = await kube.get<DeploymentObject>({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: 'apiserver',
    ...ref,
  });
  // a cluster without the openshift-apiserver's objects (as in MicroShift) has no rollout to wait for
  if (!config || !deployment) return [];
  const observed = yaml.load(config.data?.['config.yaml'] ?? '{}') as { routingConfig?: { subdomain?: string } };
  const subdomain = observed?.routingConfig?.subdomain;
  if (subdomain !== appsDomain)
    return [`openshift-apiserver config routingConfig.subdomain is ${subdomain ?? 'unset'}, not ${appsDomain} yet`];
  const wanted = configMapHash(config.data ?? {});
  const replicas = deployment.spec?.replicas ?? 1;
  const status = deployment.status ?? {};
  if (deployment.spec?.template?.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] !== wanted)
    return ['Deployment openshift-apiserver/apiserver not yet updated to the new routing subdomain'];
  if (
    (status.observedGeneration ?? 0) < (deployment.metadata.generation ?? 0) ||
    (status.updatedReplicas ?? 0) < replicas ||
    (status.availableReplicas ?? 0) < replicas
  )
    return [
      `Deployment openshift-apiserver/apiserver rolling out: ${status.updatedReplicas ?? 0}/${replicas} pods updated, ${status.availableReplicas ?? 0}/${replicas} available`,
    ];
  return [];
}
