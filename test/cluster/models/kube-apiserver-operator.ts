/**
 * The kube-apiserver operator's revisions on a single node (openshift/cluster-kube-apiserver-operator
 * release-4.18 and the library-go it vendors; the lists cited are the same in release-4.14 to 4.17,
 * starter.go:573-647 there):
 *
 * - what is revisioned and what is not (pkg/operator/starter.go:595-669): the ConfigMaps
 *   `kube-apiserver-pod`, `config` and `oauth-metadata` are RevisionConfigMaps, so a change in any
 *   makes a revision and a restart; `client-ca` and `trusted-ca-bundle` are CertConfigMaps and
 *   `user-serving-cert-000..009` CertSecrets, which the cert-syncer copies into the running pod: a
 *   new client CA (apiserver.config spec.clientCA, merged into client-ca by
 *   targetconfigcontroller.go:298-320) or new contents of a named certificate's secret reach the
 *   API server with no revision, so this model does nothing for them;
 * - the proxy: the config observer takes proxy.config's status (library-go
 *   pkg/operator/configobserver/proxy/observe_proxy.go:69-84, observe_config_controller.go:161) and
 *   the target config controller puts it into the pod as HTTP_PROXY/HTTPS_PROXY/NO_PROXY
 *   (targetconfigcontroller.go:258-266): `kube-apiserver-pod` changes, so a proxy is a revision;
 * - config observation: apiserver.config's namedCertificates become servingInfo.namedCertificates
 *   with the files of user-serving-cert-00<index> (pkg/operator/configobservation/apiserver/
 *   observe_apiserver.go:91-184); more than 10 entries, names another entry already holds, or a
 *   secret openshift-config lacks, are refused: the old observed config stays and
 *   ConfigObservationDegraded is set (:29-42, 96-100, 146-149, 170-175, 219-223). The OAuth
 *   issuer comes from the oauth-openshift route's admitted host (the authentication operator's
 *   metadata controller, then auth_metadata.go:86-147);
 * - the revision controller: a change in a revisioned ConfigMap makes revision N+1, its copies
 *   `config-<N+1>`, `oauth-metadata-<N+1>` and `kube-apiserver-pod-<N+1>` in openshift-kube-apiserver,
 *   and raises latestAvailableRevision (library-go pkg/operator/revisioncontroller/
 *   revision_controller.go:101-139, 147-226); it runs on its own, so two inputs that change a few
 *   seconds apart make two revisions;
 * - the installer controller: the node's targetRevision is set, NodeInstallerProgressing is True,
 *   an installer runs, the static pod restarts (on one node the API is gone meanwhile: the test API
 *   server is stopped and started again), and only then currentRevision becomes the installed one
 *   (installer_controller.go:543-574, 683-693, 824-829). A revision made while the installer of an
 *   older one is still at work replaces it: the old installer is deleted and the node's target
 *   becomes the newest (:731-758), so two revisions close together cost one restart. With every node
 *   at the latest revision, NodeInstallerProgressing is False with reason AllNodesAtLatestRevision;
 * - a revision whose kube-apiserver does not start (a named certificate whose key does not match):
 *   on a single node the startup monitor starts the last known good revision again after its
 *   fallback timeout (--fallback-timeout-duration=300s, library-go startupmonitor
 *   assets/startup-monitor-pod.yaml:17), the node's lastFailedRevision becomes the failed one and
 *   currentRevision stays (installer_controller.go:830-845); the installer backs off 10 minutes before
 *   it tries again (:209), so the model tries it only once a newer revision comes;
 * - the status controller: the ClusterOperator's Progressing is the union of the *Progressing
 *   conditions (library-go pkg/operator/status/status_controller.go:219); Available stays True
 *   through a rollout (installer_controller.go:672-681).
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { Ledger } from './ledger.js';
import {
  APISERVER_CONFIG,
  clients,
  isNotFound,
  KUBE_APISERVERS,
  listRoutes,
  proxyStatus,
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
  /** restarts the API server (the static pod of the new revision), down for `downMs` when given */
  restart(downMs?: number): Promise<void>;
  /** how long the revision takes to reach the installer and the installer to run, before the restart (durations.ts) */
  installerMs: number;
  /** how long the API is down when a revision fails and the startup monitor falls back (durations.ts) */
  fallbackDownMs: number;
  intervalMs?: number;
  ledger?: Ledger;
}

interface ObservedConfig {
  servingInfo: { namedCertificates: { names: string[]; certFile: string; keyFile: string }[] };
  oauthIssuer?: string;
  /** the kube-apiserver container's proxy environment */
  proxyEnv: { name: string; value: string }[];
  /** the named certificates' secrets, for whether the new kube-apiserver starts (not part of any revision) */
  secrets: string[];
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
  /** an installer at work: the API server restarts at its end */
  let installing = false;

  /** What config observation makes of apiserver.config now, or the reason it refuses it. */
  async function observe(): Promise<ObservedConfig | string> {
    const apiserver = (await custom.getClusterCustomObject({ ...APISERVER_CONFIG, name: 'cluster' })) as {
      spec?: { servingCerts?: { namedCertificates?: { names?: string[]; servingCertificate: { name: string } }[] } };
    };
    const named = apiserver.spec?.servingCerts?.namedCertificates ?? [];
    for (const [i, c] of named.entries()) {
      try {
        await core.readNamespacedSecret({ namespace: 'openshift-config', name: c.servingCertificate.name });
      } catch (e) {
        if (isNotFound(e))
          return `spec.servingCerts.namedCertificates[${i}].servingCertificate: secret openshift-config/${c.servingCertificate.name} not found`;
        throw e;
      }
    }
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
      proxyEnv: await proxyEnv(),
      secrets: named.map((c) => c.servingCertificate.name),
    };
  }

  /** targetconfigcontroller.go proxyMapToEnvVars: the observed proxy as environment, sorted by name */
  async function proxyEnv(): Promise<{ name: string; value: string }[]> {
    const status = await proxyStatus(custom);
    return (
      [
        ['HTTPS_PROXY', status.httpsProxy],
        ['HTTP_PROXY', status.httpProxy],
        ['NO_PROXY', status.noProxy],
      ] as const
    ).flatMap(([name, value]) => (value ? [{ name, value }] : []));
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
    const { oauthIssuer, proxyEnv: env, servingInfo } = config;
    const kubeApiServerConfig = { servingInfo };
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
      [
        `kube-apiserver-pod-${n}`,
        {
          'pod.yaml': JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'kube-apiserver', namespace: OPERAND_NAMESPACE, labels: { revision: String(n) } },
            spec: { containers: [{ name: 'kube-apiserver', env }] },
          }),
        },
      ],
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
    const latest = await revise(status.latestAvailableRevision ?? 1);
    const node = status.nodeStatuses?.[0] ?? { nodeName: opts.nodeName, currentRevision: latest };
    const current = node.currentRevision ?? latest;
    const failed = node.lastFailedRevision;
    // the failed revision is not tried again until a newer one comes (the installer's 10-minute back-off)
    if (current === latest || failed === latest) {
      conditions = setCondition(conditions, installer(`1 node is at revision ${current}`, false));
      await writeStatus({
        latestAvailableRevision: latest,
        nodeStatuses: [
          {
            nodeName: opts.nodeName,
            currentRevision: current,
            ...(failed !== undefined && { lastFailedRevision: failed }),
          },
        ],
        conditions,
      });
      return;
    }
    // the installer at work; a revision made meanwhile replaces its target (installer_controller.go:731-758)
    installing = true;
    try {
      await install(latest, current, failed, conditions);
    } finally {
      installing = false;
    }
  });

  /** Installs the latest revision (and any made meanwhile), then restarts the API server on it. */
  async function install(latest: number, current: number, failed: number | undefined, conditions: Condition[]) {
    let target = 0;
    while (target !== latest) {
      target = latest;
      conditions = setCondition(
        conditions,
        installer(`1 node is at revision ${current}; 0 nodes have achieved new revision ${target}`, true),
      );
      await writeStatus({
        latestAvailableRevision: latest,
        nodeStatuses: [
          {
            nodeName: opts.nodeName,
            currentRevision: current,
            targetRevision: target,
            ...(failed !== undefined && { lastFailedRevision: failed }),
          },
        ],
        conditions,
      });
      await new Promise((resolve) => setTimeout(resolve, opts.installerMs));
      const again = await observe();
      if (typeof again !== 'string') lastObserved = again;
      latest = await revise(latest);
    }
    // the static pod of the target revision replaces the running one
    const starts = await startsWith(core, lastObserved!.secrets);
    opts.ledger?.record('kube-apiserver', `revision ${target} installed`);
    if (result.restarts) await opts.restart(starts ? undefined : opts.fallbackDownMs);
    if (!starts) {
      // the startup monitor's fallback: the last known good revision runs again
      opts.ledger?.record(
        'kube-apiserver-fallback',
        `revision ${target} did not start; revision ${current} runs again`,
      );
      await writeStatus({
        latestAvailableRevision: latest,
        nodeStatuses: [{ nodeName: opts.nodeName, currentRevision: current, lastFailedRevision: target }],
        conditions: setCondition(conditions, installer(`1 node is at revision ${current}`, false)),
      });
      return;
    }
    installed.push(target);
    await writeStatus({
      latestAvailableRevision: latest,
      nodeStatuses: [{ nodeName: opts.nodeName, currentRevision: target }],
      conditions: setCondition(conditions, installer(`1 node is at revision ${target}`, false)),
    });
  }

  /** The revision controller: a new revision when an input differs from the latest revision's copy. */
  async function revise(latest: number): Promise<number> {
    const wanted = lastObserved!;
    const copy = async (name: string, key: string) =>
      (await core.readNamespacedConfigMap({ namespace: OPERAND_NAMESPACE, name: `${name}-${latest}` })).data?.[key] ??
      '{}';
    const config = JSON.parse(await copy('config', 'config.yaml')) as { servingInfo?: unknown };
    const issuer =
      (JSON.parse(await copy('oauth-metadata', 'oauthMetadata')) as { issuer?: string }).issuer || undefined;
    const pod = JSON.parse(await copy('kube-apiserver-pod', 'pod.yaml')) as {
      spec?: { containers?: { env?: unknown }[] };
    };
    // library-go revision_controller.go:147-226 names each changed input
    const changed = [
      !isDeepStrictEqual(config.servingInfo, wanted.servingInfo) && 'configmap/config has changed',
      issuer !== wanted.oauthIssuer && 'configmap/oauth-metadata has changed',
      !isDeepStrictEqual(pod.spec?.containers?.[0]?.env ?? [], wanted.proxyEnv) &&
        'configmap/kube-apiserver-pod has changed',
    ].filter((c): c is string => typeof c === 'string');
    if (changed.length === 0) return latest;
    await writeRevision(latest + 1, wanted);
    opts.ledger?.record('kube-apiserver-revision', `revision ${latest + 1}: ${changed.join(', ')}`);
    return latest + 1;
  }
  result = Object.assign(model, { installed, restarts: true, busy: () => installing });
  return result;
}

/** Whether a kube-apiserver serving these secrets of openshift-config starts: each pair parses and matches. */
async function startsWith(core: CoreV1Api, secrets: readonly string[]): Promise<boolean> {
  for (const name of secrets) {
    const s = await core.readNamespacedSecret({ namespace: 'openshift-config', name });
    try {
      const cert = new X509Certificate(Buffer.from(s.data?.['tls.crt'] ?? '', 'base64'));
      if (!cert.checkPrivateKey(createPrivateKey(Buffer.from(s.data?.['tls.key'] ?? '', 'base64')))) return false;
    } catch {
      return false;
    }
  }
  return true;
}
