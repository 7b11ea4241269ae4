/**
 * [proxy] The site's cluster-wide proxy and trust bundle, written where the installer writes
 * install-config's proxy and additionalTrustBundle (openshift/installer,
 * pkg/asset/manifests/additionaltrustbundleconfig.go and proxy.go): the
 * PEM bundle into the ConfigMap openshift-config/user-ca-bundle (key ca-bundle.crt), and the proxy
 * into proxy.config.openshift.io/cluster's spec (httpProxy, httpsProxy, noProxy), with
 * spec.trustedCA naming user-ca-bundle when the bundle is for the proxy too. The ConfigMap comes
 * first, so the network operator never reads a trustedCA it cannot find.
 *
 * What the cluster does with it (README "The site's proxy and trust bundle"): the network operator
 * checks the proxy and publishes it in the Proxy's status and the merged bundle in
 * openshift-config-managed/trusted-ca-bundle; the machine-config operator renders both into the
 * node's config, and for a proxy change the machine-config daemon reboots the node. That is why
 * the step is the last write of the run. The trust bundle alone reboots nothing: the daemon restarts
 * CRI-O for it, and the kube-apiserver reads its trusted CA bundle without a revision. The proxy is
 * also a kube-apiserver revision, which the step waits for (docs/rollouts.md).
 *
 * The site's proxy is the whole proxy: a field it leaves out is cleared. A site-config without
 * spec.proxy leaves the cluster's proxy as it is.
 */
import type { Site } from '../config/site.js';
import type { Step } from './step.js';
import type { Change, PlanResult } from '../engine/step.js';
import { CONFIG_NAMESPACE, diffLines, managedLabels, USER_CA_BUNDLE } from '../kube/openshift.js';
import { proxyRevisionUnsettled } from '../kube/rollout.js';
import { awaitRollout } from '../kube/await-rollout.js';
import type { KubeObject, ObjectRef } from '../ports/kube.js';

export const PROXY_CONFIG: ObjectRef = { apiVersion: 'config.openshift.io/v1', kind: 'Proxy', name: 'cluster' };
/** the key the network operator reads */
export const CA_BUNDLE_KEY = 'ca-bundle.crt';
const userCaBundleRef: ObjectRef = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace: CONFIG_NAMESPACE,
  name: USER_CA_BUNDLE,
};

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}
interface ProxySpec {
  httpProxy?: string;
  httpsProxy?: string;
  noProxy?: string;
  trustedCA?: { name?: string };
}
type ProxyObject = KubeObject & { spec?: ProxySpec };

const PROXY_FIELDS = ['httpProxy', 'httpsProxy', 'noProxy'] as const;

/** What the step reads: the user-ca-bundle ConfigMap and the cluster's Proxy. */
export interface ProxyView {
  userCaBundle?: ConfigMapObject;
  proxy?: ProxyObject;
}

/** What apply writes, and what settle waits for. The trust bundle is public: CA certificates. */
export interface ProxyDecision {
  /** the site's trust bundle into the user-ca-bundle ConfigMap, first */
  userCaBundle?: { write: 'create' | 'update'; pem: string };
  /** a JSON merge patch of the Proxy's spec */
  proxyPatch?: Record<string, unknown>;
  /** the site's proxy, which settle waits to find in the kube-apiserver's latest revision */
  awaitRevision?: { httpProxy?: string; httpsProxy?: string };
}

interface Comparison {
  changes: Change[];
  conflict?: string;
  decision: ProxyDecision;
}

function decide(view: ProxyView, site: Site): Comparison {
  const { proxy, trustBundle } = site;
  const s: Comparison = {
    changes: [],
    decision: {
      ...(proxy && {
        awaitRevision: {
          ...(proxy.httpProxy !== undefined && { httpProxy: proxy.httpProxy }),
          ...(proxy.httpsProxy !== undefined && { httpsProxy: proxy.httpsProxy }),
        },
      }),
    },
  };
  if (trustBundle && view.userCaBundle?.data?.[CA_BUNDLE_KEY] !== trustBundle.caBundlePem) {
    const write = view.userCaBundle ? 'update' : 'create';
    s.decision.userCaBundle = { write, pem: trustBundle.caBundlePem };
    s.changes.push({
      action: write,
      target: `ConfigMap ${CONFIG_NAMESPACE}/${USER_CA_BUNDLE}`,
      summary: "the site's trust bundle (spec.trustBundle), merged into the cluster's trusted CAs",
    });
  }
  if (!view.proxy) {
    s.conflict = 'proxy.config.openshift.io/cluster does not exist: the installer makes it on every cluster';
    return s;
  }
  const spec = view.proxy.spec ?? {};
  const want: ProxySpec = { ...spec };
  if (proxy) for (const field of PROXY_FIELDS) want[field] = proxy[field];
  if (trustBundle?.proxyTrustedCA) want.trustedCA = { name: USER_CA_BUNDLE };
  const patch: Record<string, unknown> = {};
  for (const field of PROXY_FIELDS) if (want[field] !== spec[field]) patch[field] = want[field] ?? null;
  if (want.trustedCA?.name !== spec.trustedCA?.name) patch.trustedCA = want.trustedCA;
  if (Object.keys(patch).length > 0) {
    s.decision.proxyPatch = patch;
    s.changes.push({
      action: 'update',
      target: 'Proxy cluster',
      summary: proxy
        ? "the site's cluster-wide proxy (the machine-config daemon reboots the node for it)"
        : "spec.trustedCA: the site's trust bundle for the proxy",
      // the proxy's status reaches the kube-apiserver's and openshift-apiserver's pods and the node's
      // proxy.env, its trusted CA the openshift-apiserver's; any change of the object (its resource
      // version) rolls the OAuth server out
      rollouts: PROXY_FIELDS.some((f) => f in patch)
        ? ['kube-apiserver', 'openshift-apiserver', 'oauth-server', 'reboot']
        : ['openshift-apiserver', 'oauth-server'],
      diff: diffLines(
        Object.fromEntries(Object.keys(patch).map((k) => [k, spec[k as keyof ProxySpec]])),
        Object.fromEntries(Object.keys(patch).map((k) => [k, want[k as keyof ProxySpec]])),
        'spec',
      ),
    });
  }
  return s;
}

const givesProxy = (site: Site) => site.proxy !== undefined || site.trustBundle !== undefined;

export const proxyStep: Step<ProxyView, ProxyDecision> = {
  name: 'proxy',
  group: 'cluster',
  description:
    "the site's trust bundle in `openshift-config/user-ca-bundle` and its proxy in `proxy.config` (httpProxy, httpsProxy, noProxy, trustedCA); waits for the kube-apiserver revision the proxy causes",
  inputs: (site) => ({ proxy: site.proxy ?? null, trustBundle: site.trustBundle ?? null }),

  async survey(ctx) {
    // the cluster's proxy stays without asking the API when the site-config gives none
    if (!givesProxy(ctx.site)) return {};
    const kube = await ctx.kube();
    const userCaBundle = ctx.site.trustBundle ? await kube.get<ConfigMapObject>(userCaBundleRef) : undefined;
    const proxy = await kube.get<ProxyObject>(PROXY_CONFIG);
    return { ...(userCaBundle && { userCaBundle }), ...(proxy && { proxy }) };
  },

  plan(view, site): PlanResult<ProxyDecision> {
    if (!givesProxy(site))
      return {
        action: 'noop',
        reason: "the site-config gives no proxy and no trust bundle: the cluster's stay as they are",
      };
    const s = decide(view, site);
    if (s.conflict) return { action: 'conflict', reason: s.conflict };
    if (s.changes.length === 0) return { action: 'noop', reason: "the site's proxy and trust bundle are in place" };
    return {
      action: 'change',
      summary: "give the cluster the site's proxy and trust bundle",
      changes: s.changes,
      decision: s.decision,
    };
  },

  async apply(ctx, { userCaBundle, proxyPatch }) {
    const kube = await ctx.kube();
    if (userCaBundle?.write === 'create')
      await kube.create<ConfigMapObject>({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: USER_CA_BUNDLE, namespace: CONFIG_NAMESPACE, labels: { ...managedLabels } },
        data: { [CA_BUNDLE_KEY]: userCaBundle.pem },
      });
    else if (userCaBundle?.write === 'update')
      // read-modify-write: the decision's bundle into the ConfigMap as it is now, its other keys kept
      await kube.update<ConfigMapObject>(userCaBundleRef, (cm) => ({
        ...cm,
        data: { ...cm.data, [CA_BUNDLE_KEY]: userCaBundle.pem },
      }));
    if (proxyPatch) await kube.mergePatch(PROXY_CONFIG, { spec: proxyPatch });
    ctx.log.info(
      { userCaBundle: userCaBundle?.write ?? 'in place', proxy: Object.keys(proxyPatch ?? {}) },
      "the site's proxy and trust bundle are in place",
    );
  },

  /**
   * The proxy reaches the kube-apiserver as a new revision, an API outage on a single node: waited
   * for, so that no later step writes into it and `health` starts from a settled API server. The
   * reboot the machine-config daemon makes for it may come meanwhile; the run resumes after the boot.
   */
  async settle(ctx, { awaitRevision }) {
    if (!awaitRevision) return;
    const kube = await ctx.kube();
    await awaitRollout(ctx, 'proxy', () => proxyRevisionUnsettled(kube, awaitRevision));
  },
};
