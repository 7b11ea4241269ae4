/**
 * The kube-apiserver operator's revisions on a single node (openshift/cluster-kube-apiserver-operator
 * @c813e820 and the library-go it vendors):
 *
 * - config observation: apiserver.config's namedCertificates become servingInfo.namedCertificates
 *   with the files of user-serving-cert-00<index> (pkg/operator/configobservation/apiserver/
 *   observe_apiserver.go:91-184); more than 10 entries, or names another entry already holds, are
 *   refused: the old observed config stays and ConfigObservationDegraded is set (:29-42, 96-100,
 *   170-175, 219-223). The OAuth issuer comes from the oauth-openshift route's admitted host (the
 *   authentication operator's metadata controller, then auth_metadata.go:86-147);
 * - the revision controller: a change in a revisioned ConfigMap (config, oauth-metadata:
 *   pkg/operator/starter.go:696-701) makes revision N+1, its copies `config-<N+1>` and
 *   `oauth-metadata-<N+1>` in openshift-kube-apiserver, and raises latestAvailableRevision
 *   (library-go pkg/operator/revisioncontroller/revision_controller.go:141);
 * - the installer controller: the node's targetRevision is set, NodeInstallerProgressing is True,
 *   an installer runs, the static pod restarts (on one node the API is gone meanwhile: the test API
 *   server is stopped and started again), and only then currentRevision becomes the installed one
 *   (installer_controller.go:543-574, 683-693, 824-829). A revision newer than the one being
 *   installed is installed next (:744-758). With every node at the latest revision,
 *   NodeInstallerProgressing is False with reason AllNodesAtLatestRevision;
 * - the status controller: the ClusterOperator's Progressing is the union of the *Progressing
 *   conditions (library-go pkg/operator/status/status_controller.go:219); Available stays True
 *   through a rollout (installer_controller.go:672-681).
 */
import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  APISERVER_CONFIG,
  clients,
  isNotFound,
  KUBE_APISERVERS,
  listRoutes,
  setCondition,
  setOperatorCondition,
  startLoop,
  type Condition,
  type Model,
} from './loop.js';

export const OPERAND_NAMESPACE = 'openshift-kube-apiserver';
const MAX_NAMED_CERTIFICATES = 10;

export interface KubeApiServerOptions {
  /** node name in nodeStatuses */
  nodeName: string;
  /** restarts the API server (the static pod of the new revision) */
  restart(): Promise<void>;
  /** how long the revision takes to reach the installer and the installer to run, before the restart; default 3 s */
  installerMs?: number;
  intervalMs?: number;
}

interface ObservedConfig {
  servingInfo: { namedCertificates: { names: string[]; certFile: string; keyFile: string }[] };
  oauthIssuer?: string;
}

interface OperatorStatus {
  latestAvailableRevision?: number;
  nodeStatuses?: { nodeName: string; currentRevision?: number; targetRevision?: number; lastFailedRevision?: number }[];
  conditions?: Condition[];
}

export interface KubeApiServerModel extends Model {
  /** revisions installed, in order (the API restarted once for each) */
  installed: number[];
  /** whether installing a revision restarts the test API server; default true */
  restarts: boolean;
}

export function startKubeApiServerOperator(kc: KubeConfig, opts: KubeApiServerOptions): KubeApiServerModel {
  const { custom, core } = clients(kc);
  const installed: number[] = [];
  let lastObserved: ObservedConfig | undefined;

  /** What config observation makes of apiserver.config now, or the reason it refuses it. */
  async function observe(): Promise<ObservedConfig | string> {
    const apiserver = (await custom.getClusterCustomObject({ ...APISERVER_CONFIG, name: 'cluster' })) as {
      spec?: { servingCerts?: { namedCertificates?: { names?: string[]; servingCertificate: { name: string } }[] } };
    };
    const named = apiserver.spec?.servingCerts?.namedCertificates ?? [];
    if (named.length > MAX_NAMED_CERTIFICATES)
      return `spec.servingCerts.namedCertificates: Too many: ${named.length}: must have at most ${MAX_NAMED_CERTIFICATES} items`;
    const seen = new Set<string>();
    for (const [i, c] of named.entries())
      for (const n of c.names ?? []) {
        if (seen.has(n)) return `spec.servingCerts.namedCertificates[${i}].names: Duplicate value: "${n}"`;
        seen.add(n);
      }
    const route = (await listRoutes(custom, 'openshift-authentication')).find(
      (r) => r.metadata.name === 'oauth-openshift',
    );
    const issuerHost = route?.status?.ingress?.[0]?.host;
    return {
      servingInfo: {
        namedCertificates: named.map((c, i) => ({
          names: c.names ?? [],
          certFile: `/etc/kubernetes/static-pod-certs/secrets/user-serving-cert-00${i}/tls.crt`,
          keyFile: `/etc/kubernetes/static-pod-certs/secrets/user-serving-cert-00${i}/tls.key`,
        })),
      },
      ...(issuerHost && { oauthIssuer: `https://${issuerHost}` }),
    };
  }

  async function readStatus(): Promise<OperatorStatus | undefined> {
    try {
      const o = (await custom.getClusterCustomObject({ ...KUBE_APISERVERS, name: 'cluster' })) as {
        status?: OperatorStatus;
      };
      return o.status ?? {};
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  let written: OperatorStatus | undefined;
  async function writeStatus(status: OperatorStatus): Promise<void> {
    if (isDeepStrictEqual(status, written)) return;
    await custom.patchClusterCustomObjectStatus({
      ...KUBE_APISERVERS,
      name: 'cluster',
      body: [{ op: 'add', path: '/status', value: status }],
    });
    const progressing = status.conditions?.find((c) => c.type === 'NodeInstallerProgressing');
    await setOperatorCondition(custom, 'kube-apiserver', {
      type: 'Progressing',
      status: progressing?.status ?? 'False',
      reason: progressing?.status === 'True' ? 'NodeInstaller' : 'AsExpected',
      message: progressing?.message ?? '',
    });
    written = status;
  }

  async function writeRevision(n: number, config: ObservedConfig): Promise<void> {
    const { oauthIssuer, ...kubeApiServerConfig } = config;
    for (const [name, data] of [
      [
        `config-${n}`,
        {
          'config.yaml': JSON.stringify({
            apiVersion: 'kubecontrolplane.config.openshift.io/v1',
            kind: 'KubeAPIServerConfig',
            ...kubeApiServerConfig,
          }),
        },
      ],
      [`oauth-metadata-${n}`, { oauthMetadata: JSON.stringify({ issuer: oauthIssuer ?? '' }) }],
    ] as const) {
      try {
        await core.createNamespacedConfigMap({
          namespace: OPERAND_NAMESPACE,
          body: { metadata: { name, namespace: OPERAND_NAMESPACE }, data },
        });
      } catch (e) {
        // written by a pass the API restart interrupted
        if (!(e instanceof Error && 'code' in e && e.code === 409)) throw e;
      }
    }
  }

  const installer = (message: string, progressing: boolean): Condition => ({
    type: 'NodeInstallerProgressing',
    status: progressing ? 'True' : 'False',
    reason: progressing ? 'NodeInstaller' : 'AllNodesAtLatestRevision',
    message,
  });

  // eslint-disable-next-line prefer-const -- assigned once the loop exists, read by its passes
  let result: KubeApiServerModel;
  const model = startLoop('kube-apiserver-operator', opts.intervalMs ?? 200, async () => {
    let status = await readStatus();
    const observed = await observe();
    const refused = typeof observed === 'string' ? observed : undefined;
    if (!refused) lastObserved = observed as ObservedConfig;
    if (status === undefined) {
      // the cluster as installed: revision 1, holding the configuration observed first
      if (!lastObserved) return;
      try {
        await core.createNamespace({ body: { metadata: { name: OPERAND_NAMESPACE } } });
      } catch (e) {
        if (!(e instanceof Error && 'code' in e && e.code === 409)) throw e;
      }
      await writeRevision(1, lastObserved);
      await custom.createClusterCustomObject({
        ...KUBE_APISERVERS,
        body: {
          apiVersion: 'operator.openshift.io/v1',
          kind: 'KubeAPIServer',
          metadata: { name: 'cluster' },
          spec: { managementState: 'Managed' },
        },
      });
      status = {
        latestAvailableRevision: 1,
        nodeStatuses: [{ nodeName: opts.nodeName, currentRevision: 1 }],
        conditions: setCondition([], installer('1 node is at revision 1', false)),
      };
      installed.push(1);
      await writeStatus(status);
    }
    let conditions = setCondition(status.conditions, {
      type: 'ConfigObservationDegraded',
      status: refused ? 'True' : 'False',
      reason: refused ? 'Error' : 'AsExpected',
      message: refused ?? '',
    });
    await setOperatorCondition(custom, 'kube-apiserver', {
      type: 'Degraded',
      status: refused ? 'True' : 'False',
      reason: refused ? 'ConfigObservation_Error' : 'AsExpected',
      message: refused ?? '',
    });
    let latest = status.latestAvailableRevision ?? 1;
    const node = status.nodeStatuses?.[0] ?? { nodeName: opts.nodeName, currentRevision: latest };
    const inLatest = await core.readNamespacedConfigMap({ namespace: OPERAND_NAMESPACE, name: `config-${latest}` });
    const issuerInLatest = await core.readNamespacedConfigMap({
      namespace: OPERAND_NAMESPACE,
      name: `oauth-metadata-${latest}`,
    });
    const latestConfig = {
      ...(JSON.parse(inLatest.data?.['config.yaml'] ?? '{}') as { servingInfo?: unknown }),
      oauthIssuer: (JSON.parse(issuerInLatest.data?.oauthMetadata ?? '{}') as { issuer?: string }).issuer || undefined,
    };
    const wanted = lastObserved!;
    if (
      !isDeepStrictEqual(latestConfig.servingInfo, wanted.servingInfo) ||
      latestConfig.oauthIssuer !== wanted.oauthIssuer
    ) {
      latest += 1;
      await writeRevision(latest, wanted);
    }
    const current = node.currentRevision ?? latest;
    if (current === latest) {
      conditions = setCondition(conditions, installer(`1 node is at revision ${latest}`, false));
      await writeStatus({
        latestAvailableRevision: latest,
        nodeStatuses: [{ nodeName: opts.nodeName, currentRevision: latest }],
        conditions,
      });
      return;
    }
    conditions = setCondition(
      conditions,
      installer(`1 node is at revision ${current}; 0 nodes have achieved new revision ${latest}`, true),
    );
    await writeStatus({
      latestAvailableRevision: latest,
      nodeStatuses: [{ nodeName: opts.nodeName, currentRevision: current, targetRevision: latest }],
      conditions,
    });
    // the installer pod, then the static pod of the new revision replaces the running one
    await new Promise((resolve) => setTimeout(resolve, opts.installerMs ?? 3000));
    if (result.restarts) await opts.restart();
    installed.push(latest);
    await writeStatus({
      latestAvailableRevision: latest,
      nodeStatuses: [{ nodeName: opts.nodeName, currentRevision: latest }],
      conditions: setCondition(conditions, installer(`1 node is at revision ${latest}`, false)),
    });
  });
  result = Object.assign(model, { installed, restarts: true });
  return result;
}
