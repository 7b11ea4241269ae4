/**
 * How long the modelled components take on a real single node, each from the upstream file or
 * figure cited, and the times the models run with: all of them multiplied by one factor, so that
 * what is shorter or longer than what at a site stays so in every test (the router's new pod takes
 * longer than the kube-apiserver's installer, the openshift-apiserver's old pod serves for most of its
 * rollout).
 */
import type { RolloutTimes } from './rollout.js';

export const UPSTREAM_MS = {
  /**
   * a kube-apiserver revision reaching the installer and the installer laying it out: "about 30
   * seconds" (library-go test/library/apiserver/apiserver.go:28)
   */
  installer: 30_000,
  /**
   * the static pod's restart without an API: origin's single-node SLO, "Actual SLO for this is 60
   * seconds" (test/extended/apiserver/resiliency.go:74-79)
   */
  restartDown: 60_000,
  /**
   * a revision that does not start: --fallback-timeout-duration=300s (library-go startupmonitor
   * assets/startup-monitor-pod.yaml:17)
   */
  fallbackDown: 300_000,
  /**
   * the openshift-apiserver: its old pod's 50 s shutdown delay (cluster-openshift-apiserver-operator
   * bindata/v3.11.0/config/defaultconfig.yaml:21-22), then the new pod's start to ready (its
   * readiness probe's 10 s period over a 30 s start)
   */
  openshiftApiServer: { shutdownMs: 50_000, startMs: 30_000 },
  /**
   * the OAuth server: the old pod's preStop sleep of 25 s (cluster-authentication-operator
   * bindata/oauth-openshift/deployment.yaml:137-141), then the new pod's probes
   */
  oauthServer: { shutdownMs: 25_000, startMs: 20_000 },
  /**
   * the router: HostNetwork, so the old pod goes first and is taken to stop admitting at once
   * (workload-rollouts.ts); the new one is ready within its startup probe's 120 s, about a minute
   * (cluster-ingress-operator pkg/manifests/assets/router/deployment.yaml:52-60)
   */
  router: { shutdownMs: 0, startMs: 60_000 },
  /** the machine-config operator's renderDelay (render_controller.go:44-46) */
  renderDelay: 5_000,
} as const;

export interface ModelTimes {
  installerMs: number;
  restartDownMs: number;
  fallbackDownMs: number;
  renderDelayMs: number;
  times: Record<'openshiftApiServer' | 'oauthServer' | 'router', RolloutTimes>;
}

/** The upstream durations multiplied by `factor`. */
export function scaledTimes(factor: number): ModelTimes {
  if (!(factor > 0 && factor <= 1)) throw new Error(`rollout time factor ${factor}: must be above 0 and at most 1`);
  const ms = (upstream: number) => Math.round(upstream * factor);
  const rollout = (t: RolloutTimes): RolloutTimes => ({ shutdownMs: ms(t.shutdownMs), startMs: ms(t.startMs) });
  return {
    installerMs: ms(UPSTREAM_MS.installer),
    restartDownMs: ms(UPSTREAM_MS.restartDown),
    fallbackDownMs: ms(UPSTREAM_MS.fallbackDown),
    renderDelayMs: ms(UPSTREAM_MS.renderDelay),
    times: {
      openshiftApiServer: rollout(UPSTREAM_MS.openshiftApiServer),
      oauthServer: rollout(UPSTREAM_MS.oauthServer),
      router: rollout(UPSTREAM_MS.router),
    },
  };
}
