/**
 * Objects for watcher tests on the real test API: create custom objects and set their status the way
 * their operators would (status is a subresource, written separately).
 */
import { ApiException, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';

export interface Gvr {
  group: string;
  version: string;
  plural: string;
  /** the kind, for a collection not in KINDS (or one whose plural two groups share) */
  kind?: string;
}

export const GVR = {
  catalogSource: { group: 'operators.coreos.com', version: 'v1alpha1', plural: 'catalogsources' },
  subscription: { group: 'operators.coreos.com', version: 'v1alpha1', plural: 'subscriptions' },
  csv: { group: 'operators.coreos.com', version: 'v1alpha1', plural: 'clusterserviceversions' },
  clusterOperator: { group: 'config.openshift.io', version: 'v1', plural: 'clusteroperators' },
  machineOSConfig: { group: 'machineconfiguration.openshift.io', version: 'v1', plural: 'machineosconfigs' },
  machineOSBuild: { group: 'machineconfiguration.openshift.io', version: 'v1', plural: 'machineosbuilds' },
  machine: { group: 'cluster.x-k8s.io', version: 'v1beta1', plural: 'machines' },
} as const satisfies Record<string, Gvr>;

const KINDS: Record<string, [string, string]> = {
  catalogsources: ['operators.coreos.com/v1alpha1', 'CatalogSource'],
  subscriptions: ['operators.coreos.com/v1alpha1', 'Subscription'],
  clusterserviceversions: ['operators.coreos.com/v1alpha1', 'ClusterServiceVersion'],
  clusteroperators: ['config.openshift.io/v1', 'ClusterOperator'],
  machineosconfigs: ['machineconfiguration.openshift.io/v1', 'MachineOSConfig'],
  machineosbuilds: ['machineconfiguration.openshift.io/v1', 'MachineOSBuild'],
  machines: ['cluster.x-k8s.io/v1beta1', 'Machine'],
};

const isCode = (e: unknown, code: number) => e instanceof ApiException && e.code === code;

export const condition = (type: string, status: string, reason = 'AsExpected', message = '') => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
});

export class Scenario {
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;

  constructor(kc: KubeConfig) {
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  async namespace(name: string): Promise<void> {
    try {
      await this.core.createNamespace({ body: { metadata: { name } } });
    } catch (e) {
      if (!isCode(e, 409)) throw e;
    }
  }

  /** Creates the object, then sets its status (if given). */
  async create(
    gvr: Gvr,
    metadata: {
      name: string;
      namespace?: string;
      annotations?: Record<string, string>;
      labels?: Record<string, string>;
    },
    spec: object | undefined,
    status?: object,
  ): Promise<void> {
    const { kind: own, ...path } = gvr;
    const [apiVersion, kind] = own ? [`${gvr.group}/${gvr.version}`, own] : KINDS[gvr.plural]!;
    const body = { apiVersion, kind, metadata, ...(spec && { spec }) };
    if (metadata.namespace)
      await this.custom.createNamespacedCustomObject({ ...path, namespace: metadata.namespace, body });
    else await this.custom.createClusterCustomObject({ ...path, body });
    if (status) await this.setStatus(gvr, metadata.name, status, metadata.namespace);
  }

  async setStatus(gvr: Gvr, name: string, status: object, namespace?: string): Promise<void> {
    const { group, version, plural } = gvr;
    const body = [{ op: 'add', path: '/status', value: status }];
    if (namespace)
      await this.custom.patchNamespacedCustomObjectStatus({ group, version, plural, namespace, name, body });
    else await this.custom.patchClusterCustomObjectStatus({ group, version, plural, name, body });
  }

  async remove(gvr: Gvr, name: string, namespace?: string): Promise<void> {
    if (namespace) await this.custom.deleteNamespacedCustomObject({ ...gvr, namespace, name });
    else await this.custom.deleteClusterCustomObject({ ...gvr, name });
  }
}

/** The ClusterOperator status a healthy operator reports. */
export const healthyOperator = () => ({
  conditions: [condition('Available', 'True'), condition('Progressing', 'False'), condition('Degraded', 'False')],
});
