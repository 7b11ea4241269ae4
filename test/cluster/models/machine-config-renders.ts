/**
 * The machine-config operator's renders of the master pool, and what the daemon does with each on
 * the node, for the inputs a relocation changes (openshift/machine-config-operator, release-4.14 to
 * release-4.18; the daemon itself is modelled in test/e2e/mcd-model):
 *
 * - what reaches the rendered config: the pull secret as /var/lib/kubelet/config.json
 *   (templates/common/_base/files/pull-secret.yaml); the mirror sets as /etc/containers/registries.conf;
 *   openshift-config/user-ca-bundle as /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt
 *   (pkg/operator/sync.go:582-606); the proxy from proxy.config's status (sync.go:570-574) as
 *   /etc/mco/proxy.env and the crio, kubelet and rpm-ostreed proxy drop-ins
 *   (templates/common/_base/files/etc-mco-proxy.yaml, units/*-proxy.yaml);
 * - one render for changes close together: each change requeues the pool after renderDelay, 5 s
 *   (pkg/controller/render/render_controller.go:44-46, 364);
 * - what the daemon does for a rendered config, by the files it changes:
 *   - 4.14 and 4.15 (pkg/daemon/update.go:343-371 in 4.14, :416-444 in 4.15) and 4.16
 *     (calculatePostConfigChangeActionFromMCDiffs, update.go:569-608): config.json nothing,
 *     registries.conf a crio reload, the user CA bundle a crio restart, any other file or unit a reboot;
 *   - 4.17 and 4.18, node disruption policies on by default (pkg/apihelpers/apihelpers.go:24-119 in
 *     4.18): config.json None, registries.conf Special (a crio reload), the user CA bundle a restart of
 *     coreos-update-ca-trust and crio, anything without a policy (proxy.env, the drop-ins) a reboot.
 *
 * So on every release the pull secret and mirrors cost no reboot and a proxy costs one.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Ledger } from './ledger.js';
import { clients, isNotFound, proxyStatus, startLoop, type Model } from './loop.js';

export const RELEASES = ['4.14', '4.15', '4.16', '4.17', '4.18'] as const;
export type Release = (typeof RELEASES)[number];

const CONFIG_JSON = '/var/lib/kubelet/config.json';
const REGISTRIES_CONF = '/etc/containers/registries.conf';
const USER_CA_BUNDLE = '/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt';
const PROXY_ENV = '/etc/mco/proxy.env';

/** What the daemon does for one changed file, per release; a file without an entry is a reboot. */
const DAEMON_RULES: Record<'legacy' | 'policies', Record<string, string>> = {
  // 4.14-4.16: the lists in calculatePostConfigChangeAction(FromFileDiffs|FromMCDiffs)
  legacy: { [CONFIG_JSON]: 'none', [REGISTRIES_CONF]: 'reload crio', [USER_CA_BUNDLE]: 'restart crio' },
  // 4.17-4.18: the default node disruption policies
  policies: {
    [CONFIG_JSON]: 'None',
    [REGISTRIES_CONF]: 'Special (reload crio)',
    [USER_CA_BUNDLE]: 'Restart coreos-update-ca-trust, crio',
  },
};

/** What the daemon of `release` does for a rendered config that changes `paths`: its actions, or a reboot. */
export function actionFor(release: Release, paths: readonly string[]): { reboot: boolean; actions: string[] } {
  const rules = DAEMON_RULES[release === '4.17' || release === '4.18' ? 'policies' : 'legacy'];
  const actions = paths.map((p) => rules[p] ?? 'reboot');
  return { reboot: actions.includes('reboot'), actions: [...new Set(actions)] };
}

export interface RenderOptions {
  /** the release whose daemon rules apply; default: ClusterVersion's */
  release?: Release;
  /** render_controller.go's renderDelay; default 5 s as upstream */
  renderDelayMs?: number;
  intervalMs?: number;
  ledger?: Ledger;
}

export interface RenderModel extends Model {
  /** the rendered files' digests, by path */
  rendered(): Record<string, string>;
}

const MIRROR_KINDS = [
  { group: 'config.openshift.io', version: 'v1', plural: 'imagedigestmirrorsets' },
  { group: 'config.openshift.io', version: 'v1', plural: 'imagetagmirrorsets' },
  { group: 'operator.openshift.io', version: 'v1alpha1', plural: 'imagecontentsourcepolicies' },
];

const digest = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12);

export function startMachineConfigRenders(kc: KubeConfig, opts: RenderOptions = {}): RenderModel {
  const { custom, core } = clients(kc);
  let rendered: Record<string, string> | undefined;
  let pendingSince: number | undefined;

  async function release(): Promise<Release> {
    if (opts.release) return opts.release;
    const cv = (await custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'clusterversions',
      name: 'version',
    })) as { status?: { desired?: { version?: string } } };
    const minor = /^(\d+\.\d+)/.exec(cv.status?.desired?.version ?? '')?.[1];
    return (RELEASES as readonly string[]).includes(minor ?? '') ? (minor as Release) : '4.18';
  }

  async function files(): Promise<Record<string, string>> {
    const pull = await core.readNamespacedSecret({ namespace: 'openshift-config', name: 'pull-secret' });
    const mirrors = [];
    for (const kind of MIRROR_KINDS) {
      try {
        const list = (await custom.listClusterCustomObject(kind)) as {
          items: { metadata: { name: string }; spec: unknown }[];
        };
        mirrors.push(...list.items.map((i) => [kind.plural, i.metadata.name, i.spec]));
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
    let bundle = '';
    try {
      bundle =
        (await core.readNamespacedConfigMap({ namespace: 'openshift-config', name: 'user-ca-bundle' })).data?.[
          'ca-bundle.crt'
        ] ?? '';
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    const proxy = await proxyStatus(custom);
    return {
      [CONFIG_JSON]: digest(pull.data?.['.dockerconfigjson'] ?? ''),
      [REGISTRIES_CONF]: digest(mirrors),
      ...(bundle && { [USER_CA_BUNDLE]: digest(bundle) }),
      ...((proxy.httpProxy || proxy.httpsProxy) && { [PROXY_ENV]: digest(proxy) }),
    };
  }

  const model = startLoop('machine-config-renders', opts.intervalMs ?? 200, async () => {
    const now = await files();
    if (!rendered) {
      rendered = now;
      return;
    }
    if (isDeepStrictEqual(now, rendered)) {
      pendingSince = undefined;
      return;
    }
    pendingSince ??= Date.now();
    if (Date.now() - pendingSince < (opts.renderDelayMs ?? 5000)) return;
    const changed = [...new Set([...Object.keys(now), ...Object.keys(rendered)])].filter(
      (p) => now[p] !== rendered![p],
    );
    const r = await release();
    const { reboot, actions } = actionFor(r, changed);
    opts.ledger?.record('render', `rendered-master for ${changed.join(', ')}: ${actions.join(', ')} (${r})`);
    if (reboot) opts.ledger?.record('reboot', `${changed.join(', ')} (${r})`);
    rendered = now;
    pendingSince = undefined;
  });
  return Object.assign(model, { rendered: () => ({ ...rendered }), busy: () => pendingSince !== undefined });
}
