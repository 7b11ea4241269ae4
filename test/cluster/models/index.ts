/**
 * The OpenShift components the cluster tests run against, each a small controller over the test
 * API that does what the named upstream code does (see each file): the console and authentication
 * operators' route sync, the ingress operator and its canary, the openshift-apiserver's generated
 * hosts, the default router's admission, and the kube-apiserver operator's revisions (which restart
 * the test API server as the static pod would restart).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { TestCluster } from '../../kube/cluster.js';
import { startAuthenticationOperator } from './authentication-operator.js';
import { startConsoleOperator } from './console-operator.js';
import { startIngressOperator } from './ingress-operator.js';
import { startKubeApiServerOperator, type KubeApiServerModel } from './kube-apiserver-operator.js';
import type { Model } from './loop.js';
import { startOpenShiftApiServer } from './openshift-apiserver.js';
import { startRouter } from './router.js';
import type { ClusterNetwork } from './route-health.js';
import type { RouterDataPlane } from './router-data-plane.js';

export interface ModelOptions {
  nodeName: string;
  /** how long the API stays down while the kube-apiserver "restarts" on a new revision; default 500 ms */
  restartDownMs?: number;
  /**
   * the router's data plane and the nameservers the cluster DNS forwards to: the console and
   * authentication operators then check their routes as upstream does (route-health.ts); without
   * it they do not, and turn Available as soon as the router admits their routes
   */
  routeHealth?: { dataPlane: RouterDataPlane; network: ClusterNetwork };
}

export interface Models {
  all: Model[];
  kubeApiServer: KubeApiServerModel;
  /** resolves once every model has completed two passes in a row (the second sees the first's writes) */
  settled(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export function startModels(cluster: TestCluster, kc: KubeConfig, opts: ModelOptions): Models {
  const kubeApiServer = startKubeApiServerOperator(kc, {
    nodeName: opts.nodeName,
    restart: () => cluster.restartApiServer({ downMs: opts.restartDownMs ?? 500 }),
  });
  const all = [
    startIngressOperator(kc),
    startOpenShiftApiServer(kc),
    startRouter(kc),
    startConsoleOperator(kc, undefined, opts.routeHealth?.network),
    startAuthenticationOperator(kc, undefined, opts.routeHealth?.network),
    kubeApiServer,
    ...(opts.routeHealth ? [opts.routeHealth.dataPlane] : []),
  ];
  return {
    all,
    kubeApiServer,
    async settled(timeoutMs = 180_000) {
      const start = all.map((m) => m.passes);
      const deadline = Date.now() + timeoutMs;
      // polled: the loops are timers of their own, with nothing to await on
      while (all.some((m, i) => m.passes < start[i]! + 2)) {
        if (Date.now() > deadline)
          throw new Error(
            `models not settled: ${all.map((m) => `${m.name} ${m.passes} passes, ${m.failures} failed (${String(m.lastError).split('\n').slice(0, 3).join(' ')})`).join('; ')}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop: async () => {
      await Promise.all(all.map((m) => m.stop()));
      await opts.routeHealth?.dataPlane.close();
    },
  };
}
