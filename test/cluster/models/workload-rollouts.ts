/**
 * When the OAuth server and the default router roll out (release-4.18; the same in 4.14 to 4.17):
 *
 * - the OAuth server (openshift/cluster-authentication-operator
 *   pkg/controllers/deployment/deployment_controller.go:159-194, default_deployment.go:42-54): its pod
 *   template carries a hash of the resource versions of the proxy and of every v4-0-config-* object,
 *   among them the metadata with the issuer (the oauth-openshift route's admitted host), the
 *   componentRoute's certificate (v4-0-config-system-custom-router-certs) and the router's
 *   certificates (v4-0-config-system-router-certs, from the IngressController's default
 *   certificate); one replica with maxSurge 0 (bindata/oauth-openshift/deployment.yaml:14);
 * - the router (openshift/cluster-ingress-operator pkg/operator/controller/ingress/deployment.go:825-826):
 *   its certificate volume names the IngressController's spec.defaultCertificate secret, so naming
 *   another secret rolls it out; new contents in the same secret reach the running router with no
 *   rollout. With the HostNetwork strategy of a bare-metal single node, maxSurge 0 (:290-302), so the
 *   old pod stops before the new one can bind the node's ports. The tests take the old router to stop
 *   writing route status (admitting new hosts) as soon as the IngressController names another
 *   certificate: the stricter reading, under which a step that needs a host admitted early is caught
 *   whichever model sees the change first.
 */
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Ledger } from './ledger.js';
import {
  clients,
  INGRESS_CONTROLLERS,
  isNotFound,
  listRoutes,
  PROXIES,
  readIngressConfig,
  startLoop,
  type Model,
} from './loop.js';
import { SingleReplicaRollout, type RolloutTimes } from './rollout.js';

export interface WorkloadRolloutOptions {
  oauthServer: RolloutTimes;
  router: RolloutTimes;
  ledger?: Ledger;
  intervalMs?: number;
}

const digest = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

export interface WorkloadRollouts extends Model {
  /** whether a router pod runs (it does except between the old pod's exit and the new one's start) */
  /** whether a router pod runs with this default certificate, no rollout under way */
  routerRuns(defaultCertificate: string): boolean;
}

export function startWorkloadRollouts(kc: KubeConfig, opts: WorkloadRolloutOptions): WorkloadRollouts {
  const { custom, core } = clients(kc);
  const oauth = new SingleReplicaRollout('oauth-server', opts.oauthServer, opts.ledger);
  const router = new SingleReplicaRollout('router', opts.router, opts.ledger);

  const secretVersion = async (namespace: string, name: string | undefined) => {
    if (!name) return '';
    try {
      return (await core.readNamespacedSecret({ namespace, name })).metadata?.resourceVersion ?? '';
    } catch (e) {
      if (isNotFound(e)) return '';
      throw e;
    }
  };

  const model = startLoop('workload-rollouts', opts.intervalMs ?? 200, async () => {
    const ic = (await custom.getNamespacedCustomObject({
      ...INGRESS_CONTROLLERS,
      namespace: 'openshift-ingress-operator',
      name: 'default',
    })) as { spec?: { defaultCertificate?: { name?: string } } };
    const defaultCertificate = ic.spec?.defaultCertificate?.name ?? '';
    router.want(digest(defaultCertificate), `default certificate ${defaultCertificate || "the operator's own"}`);

    const route = (await listRoutes(custom, 'openshift-authentication')).find(
      (r) => r.metadata.name === 'oauth-openshift',
    );
    const issuer = route?.status?.ingress?.[0]?.host ?? '';
    const component = (await readIngressConfig(custom)).spec.componentRoutes?.find(
      (c) => c.namespace === 'openshift-authentication' && c.name === 'oauth-openshift',
    );
    const proxy = (await custom.getClusterCustomObject({ ...PROXIES, name: 'cluster' })) as {
      metadata: { resourceVersion?: string };
    };
    const inputs = {
      issuer,
      customRouterCerts: await secretVersion('openshift-config', component?.servingCertKeyPairSecret?.name),
      routerCerts: [defaultCertificate, await secretVersion('openshift-ingress', defaultCertificate)],
      proxy: proxy.metadata.resourceVersion,
    };
    oauth.want(digest(inputs), `issuer ${issuer}, router certificates, proxy`);
  });
  return Object.assign(model, {
    routerRuns: (defaultCertificate: string) => router.serves(digest(defaultCertificate)),
    busy: () => oauth.rolling || router.rolling,
  });
}
