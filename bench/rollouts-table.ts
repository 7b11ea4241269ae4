/**
 * Which of the agent's writes rolls out what on a single node: the one source of the table in
 * docs/rollouts.md (bench/rollouts-table.test.ts checks the page holds it as rendered here) and of
 * the minimum bench/rollouts reports each count against. Each rule is the upstream behaviour the
 * models under test/cluster/models reproduce, with the files they cite.
 */
import type { RolloutKind } from '../src/kube/rollout-costs.js';

export type Write =
  | 'appsDomain'
  | 'componentRoutes'
  | 'defaultCertificate'
  | 'oauthRouteMoved'
  | 'namedCertificates'
  | 'clientCA'
  | 'pullSecretMirrors'
  | 'trustBundle'
  | 'proxy';

export interface WriteRule {
  write: Write;
  /** the write as the table names it */
  what: string;
  /** the rollouts it causes */
  rollouts: RolloutKind[];
  /** what it costs on a single node, said in full */
  cost: string;
  upstream: string;
}

export const ROLLOUT_TABLE: readonly WriteRule[] = [
  {
    write: 'appsDomain',
    what: '`ingress.config` appsDomain',
    rollouts: ['openshift-apiserver'],
    cost: 'Its old pod keeps generating route hosts under the old domain through its 50 s shutdown delay, then the route API answers 503 until the new pod is ready.',
    upstream:
      'cluster-openshift-apiserver-operator `observe_ingresses.go:42-57`, `workload_openshiftapiserver_v311_00_sync.go:407-427`, `deploy.yaml:19-20`, `defaultconfig.yaml:21-22`',
  },
  {
    write: 'componentRoutes',
    what: '`ingress.config` componentRoutes',
    rollouts: ['oauth-server'],
    cost: "for the componentRoute's certificate (`v4-0-config-system-custom-router-certs`)",
    upstream: 'cluster-authentication-operator `deployment_controller.go:159-194`, `default_deployment.go:42-54`',
  },
  {
    write: 'defaultCertificate',
    what: 'IngressController `defaultCertificate`',
    rollouts: ['router'],
    cost: 'HostNetwork: maxSurge 0, so ingress stops. New contents in the same secret are no rollout.',
    upstream: 'cluster-ingress-operator `deployment.go:290-302, 825-826`',
  },
  {
    write: 'oauthRouteMoved',
    what: 'the OAuth route on its new host (once the router has rolled out)',
    rollouts: ['kube-apiserver', 'oauth-server'],
    cost: 'the OAuth metadata with the new issuer, a revisioned input of the kube-apiserver; the OAuth server for its new issuer',
    upstream:
      'kube-apiserver operator `starter.go:595-600`, `auth_metadata.go`; authentication operator `deployment_controller.go:159-194`',
  },
  {
    write: 'namedCertificates',
    what: '`apiserver.config` namedCertificates',
    rollouts: ['kube-apiserver'],
    cost: '`config` is revisioned. New contents in the same secret are hot-reloaded.',
    upstream: 'kube-apiserver operator `starter.go:595-669`, `observe_apiserver.go:91-184`',
  },
  {
    write: 'clientCA',
    what: '`apiserver.config` spec.clientCA',
    rollouts: [],
    cost: '`client-ca` is a CertConfigMap that the running API server reloads',
    upstream: '`starter.go:632-634`, `targetconfigcontroller.go:298-320`',
  },
  {
    write: 'pullSecretMirrors',
    what: 'pull secret, mirror sets',
    rollouts: [],
    cost: 'one render of the master pool (changes within 5 s are one render); no reboot on any release: `config.json` needs nothing, `registries.conf` needs a CRI-O reload',
    upstream:
      'machine-config-operator `render_controller.go:44-46`; `update.go:343-371` (4.14), `:416-444` (4.15), `:569-608` (4.16); `apihelpers.go:24-119` (4.17, 4.18)',
  },
  {
    write: 'trustBundle',
    what: 'trust bundle (`user-ca-bundle`)',
    rollouts: ['openshift-apiserver'],
    cost: 'CRI-O restart, no reboot; the kube-apiserver reloads its trusted CA bundle; the openshift-apiserver template hashes `trusted-ca-bundle`',
    upstream: 'same, and openshift-apiserver operator `:414`',
  },
  {
    write: 'proxy',
    what: '`proxy.config`',
    rollouts: ['reboot', 'kube-apiserver', 'openshift-apiserver', 'oauth-server'],
    cost: "`/etc/mco/proxy.env` and the proxy drop-ins have no disruption policy; the proxy goes into the kube-apiserver pod's environment; the OAuth server's template hashes the proxy's resource version",
    upstream:
      'machine-config-operator `templates/common/_base/files/etc-mco-proxy.yaml`; kube-apiserver operator `observe_config_controller.go:161`, `targetconfigcontroller.go:258-266`; authentication operator `deployment_controller.go:172-173`',
  },
];

/** The writes a site's settings make (the domain's five, pull secret and mirrors, client CA, trust bundle, proxy). */
export const DOMAIN_WRITES: readonly Write[] = [
  'appsDomain',
  'componentRoutes',
  'defaultCertificate',
  'oauthRouteMoved',
  'namedCertificates',
];

/**
 * The fewest rollouts of each kind the writes can cost: one of each kind some write causes. Writes
 * close together share a rollout (a revision made while an installer works is installed with it, a
 * template that changes before the new pod is ready joins its outage, changes within renderDelay are
 * one render), so none of them can be made for less; where one write can only follow another's
 * rollout (the OAuth route moves after the router's), a count above this is the price of that order.
 */
export function minimumRollouts(writes: readonly Write[], kinds: readonly RolloutKind[]): Record<RolloutKind, number> {
  const caused = new Set(ROLLOUT_TABLE.filter((r) => writes.includes(r.write)).flatMap((r) => r.rollouts));
  return Object.fromEntries(kinds.map((k) => [k, caused.has(k) ? 1 : 0])) as Record<RolloutKind, number>;
}

const rolledOut = (r: WriteRule) => {
  if (r.rollouts.length === 0) return 'no rollout';
  const noun = (k: RolloutKind) =>
    k === 'kube-apiserver' ? 'a kube-apiserver revision' : k === 'reboot' ? 'one reboot' : `one ${k} rollout`;
  return r.rollouts.map(noun).join(', ');
};

/** The table as docs/rollouts.md shows it. */
export function rolloutTableMarkdown(): string {
  return [
    '| agent write | rolls out | what it costs on a single node | upstream |',
    '| --- | --- | --- | --- |',
    ...ROLLOUT_TABLE.map((r) => `| ${r.what} | ${rolledOut(r)} | ${r.cost} | ${r.upstream} |`),
  ].join('\n');
}
