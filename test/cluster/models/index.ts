/**
 * The OpenShift components the cluster tests run against, each a small controller over the test
 * API that does what the named upstream code does (see each file): the console and authentication
 * operators' route sync, the ingress operator and its canary, the openshift-apiserver's generated
 * hosts, the default router's admission, and the kube-apiserver operator's revisions (which restart
 * the test API server as the static pod would restart).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { TestCluster } from '../../kube/cluster.js';
import type { AggregatedRoutes } from '../../kube/aggregated-routes.js';
import { FACTORY_BASE_DOMAIN, FACTORY_CLUSTER_NAME, FACTORY_NODE_IP } from '../../kube/factory-cluster.js';
import { startAuthenticationOperator } from './authentication-operator.js';
import { startConsoleOperator } from './console-operator.js';
import { startIngressOperator } from './ingress-operator.js';
import { startKubeApiServerOperator, type KubeApiServerModel } from './kube-apiserver-operator.js';
import { Ledger } from './ledger.js';
import type { Model } from './loop.js';
import { startMachineConfigRenders, type Release } from './machine-config-renders.js';
import { startNetworkOperator } from './network-operator.js';
import { startOpenShiftApiServer } from './openshift-apiserver.js';
import type { RolloutTimes } from './rollout.js';
import { scaledTimes } from './durations.js';
import { startRouter } from './router.js';
import { startWorkloadRollouts } from './workload-rollouts.js';
import type { ClusterNetwork } from './route-health.js';
import type { RouterDataPlane } from './router-data-plane.js';

export interface ModelOptions {
  nodeName: string;
  /**
   * every duration of durations.ts UPSTREAM_MS multiplied by this (the suite's ROLLOUT_TIME_FACTOR,
   * test/cluster/env.ts); the fields below override one each
   */
  timeFactor: number;
  /** how long the API stays down while the kube-apiserver "restarts" on a new revision */
  restartDownMs?: number;
  /** how long a revision takes to reach the installer and the installer to run */
  installerMs?: number;
  /** how long a failed revision keeps the API down before the startup monitor falls back */
  fallbackDownMs?: number;
  /** the deployments' rollouts */
  times?: Partial<Record<'openshiftApiServer' | 'oauthServer' | 'router', RolloutTimes>>;
  /** the machine-config operator's renderDelay */
  renderDelayMs?: number;
  /** the release whose machine-config daemon rules apply; default ClusterVersion's */
  release?: Release;
  /** route.openshift.io served by aggregation: the openshift-apiserver model stops it while no pod serves */
  routes?: AggregatedRoutes;
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
  /** every rollout, revision, render and reboot the models made */
  ledger: Ledger;
  /**
   * resolves once every model has completed two passes in a row (the second sees the first's writes)
   * and has nothing under way
   */
  settled(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export function startModels(cluster: TestCluster, kc: KubeConfig, opts: ModelOptions): Models {
  const ledger = new Ledger();
  const scaled = scaledTimes(opts.timeFactor);
  const times = { ...scaled.times, ...opts.times };
  const kubeApiServer = startKubeApiServerOperator(kc, {
    nodeName: opts.nodeName,
    restart: (downMs) => cluster.restartApiServer({ downMs: downMs ?? opts.restartDownMs ?? scaled.restartDownMs }),
    installerMs: opts.installerMs ?? scaled.installerMs,
    fallbackDownMs: opts.fallbackDownMs ?? scaled.fallbackDownMs,
    ledger,
  });
  const workloads = startWorkloadRollouts(kc, { oauthServer: times.oauthServer, router: times.router, ledger });
  const all = [
    startIngressOperator(kc),
    startNetworkOperator(kc, {
      clusterDomain: `${FACTORY_CLUSTER_NAME}.${FACTORY_BASE_DOMAIN}`,
      networks: ['10.128.0.0/14', '172.30.0.0/16', `${FACTORY_NODE_IP}/24`],
    }),
    startOpenShiftApiServer(kc, {
      times: times.openshiftApiServer,
      ...(opts.routes && { routes: opts.routes }),
      ledger,
    }),
    startRouter(kc, undefined, (certificate) => workloads.routerRuns(certificate)),
    startConsoleOperator(kc, undefined, opts.routeHealth?.network),
    startAuthenticationOperator(kc, undefined, opts.routeHealth?.network),
    workloads,
    startMachineConfigRenders(kc, {
      renderDelayMs: opts.renderDelayMs ?? scaled.renderDelayMs,
      ...(opts.release && { release: opts.release }),
      ledger,
    }),
    kubeApiServer,
    ...(opts.routeHealth ? [opts.routeHealth.dataPlane] : []),
  ];
  return {
    all,
    kubeApiServer,
    ledger,
    async settled(timeoutMs = 180_000) {
      const start = all.map((m) => m.passes);
      const deadline = Date.now() + timeoutMs;
      // polled: the loops are timers of their own, with nothing to await on
      while (all.some((m, i) => m.passes < start[i]! + 2 || m.busy?.())) {
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
