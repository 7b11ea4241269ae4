/**
 * The OpenShift objects the cluster steps read and change, the mark on the ones the agent owns,
 * and the cluster's names (domain, apps domain, cluster name) as the steps derive them.
 */
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { RefusedError, StepError } from '../base/errors.js';
import * as z from 'zod';
import type { RootFs } from '../ports/fs.js';
import { readJsonFile } from '../ports/json-file.js';
import type { Kube, KubeObject, ObjectRef } from '../ports/kube.js';

/** On every object the agent creates; reruns replace or delete only objects carrying it. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'sno-relocate';
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
export const managedLabels = { [MANAGED_BY_LABEL]: MANAGED_BY } as const;
/** Secrets the agent writes into openshift-config start with this; entries naming them are the agent's. */
export const SECRET_PREFIX = 'sno-relocate-';

export const CONFIG_NAMESPACE = 'openshift-config';
/** the installer's ConfigMap of additionalTrustBundle, in CONFIG_NAMESPACE, that the Proxy's trustedCA names */
export const USER_CA_BUNDLE = 'user-ca-bundle';
export const INGRESS_CONFIG: ObjectRef = { apiVersion: 'config.openshift.io/v1', kind: 'Ingress', name: 'cluster' };
export const APISERVER_CONFIG: ObjectRef = { apiVersion: 'config.openshift.io/v1', kind: 'APIServer', name: 'cluster' };
export const INFRASTRUCTURE_CONFIG: ObjectRef = {
  apiVersion: 'config.openshift.io/v1',
  kind: 'Infrastructure',
  name: 'cluster',
};

export const ROUTE_API = 'route.openshift.io/v1';
/** The router's namespace: an IngressController's defaultCertificate names a secret here. */
export const ROUTER_NAMESPACE = 'openshift-ingress';
export const INGRESS_CONTROLLER: ObjectRef = {
  apiVersion: 'operator.openshift.io/v1',
  kind: 'IngressController',
  namespace: 'openshift-ingress-operator',
  name: 'default',
};
/** Set by the openshift-apiserver on a route whose host it generated as `<name>-<namespace>.<apps domain>`. */
export const HOST_GENERATED_ANNOTATION = 'openshift.io/host.generated';

/**
 * Routes whose host their operator sets and puts back when anyone else changes it: moved through
 * the componentRoute their operator reads, or (the canary) not moved at all.
 */
export const OPERATOR_ROUTES = [
  { namespace: 'openshift-console', name: 'console', operator: 'console-operator', host: 'console-openshift-console' },
  {
    namespace: 'openshift-console',
    name: 'downloads',
    operator: 'console-operator',
    host: 'downloads-openshift-console',
  },
  {
    namespace: 'openshift-authentication',
    name: 'oauth-openshift',
    operator: 'authentication-operator',
    host: 'oauth-openshift',
  },
  { namespace: 'openshift-ingress-canary', name: 'canary', operator: 'ingress-operator', host: undefined },
  // made from ingress.config's console and downloads componentRoutes, and kept at their hostname
  // (console-operator pkg/console/controllers/route/controller.go, the custom route sync)
  { namespace: 'openshift-console', name: 'console-custom', operator: 'console-operator', host: undefined },
  { namespace: 'openshift-console', name: 'downloads-custom', operator: 'console-operator', host: undefined },
] as const;

export const isOperatorRoute = (r: { namespace?: string; name: string }): boolean =>
  OPERATOR_ROUTES.some((o) => o.namespace === r.namespace && o.name === r.name);

export interface RouteObject extends KubeObject {
  spec?: { host?: string; subdomain?: string };
  status?: { ingress?: { host?: string; conditions?: { type: string; status: string }[] }[] };
}

/** Whether a router admitted a route (any route, e.g. console-custom) for `host`. */
export const admittedFor = (routes: readonly RouteObject[], host: string): boolean =>
  routes.some((r) =>
    (r.status?.ingress ?? []).some(
      (i) => i.host === host && (i.conditions ?? []).some((c) => c.type === 'Admitted' && c.status === 'True'),
    ),
  );

export interface IngressConfig extends KubeObject {
  spec?: {
    domain?: string;
    appsDomain?: string;
    componentRoutes?: ComponentRoute[];
    [field: string]: unknown;
  };
}

export interface ComponentRoute {
  namespace: string;
  name: string;
  hostname: string;
  servingCertKeyPairSecret?: { name: string };
}

export interface NamedCertificate {
  names?: string[];
  servingCertificate: { name: string };
}

export interface APIServerConfig extends KubeObject {
  spec?: { servingCerts?: { namedCertificates?: NamedCertificate[] }; [field: string]: unknown };
}

export interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

export async function readIngressConfig(kube: Kube): Promise<IngressConfig> {
  const ingress = await kube.get<IngressConfig>(INGRESS_CONFIG);
  if (!ingress?.spec?.domain)
    throw new StepError(
      'ingress.config.openshift.io/cluster has no spec.domain: this does not look like an OpenShift cluster',
    );
  return ingress;
}

/**
 * The cluster's name, from the Infrastructure's API URL (api.<name>.<base>), else the ingress domain
 * (apps.<name>.<base>). A relocation keeps the name: a site-config naming another one is refused,
 * since renaming the cluster is not supported; one naming it is used when the cluster does not say.
 */
export async function clusterName(kube: Kube, siteName: string | undefined, ingress: IngressConfig): Promise<string> {
  const infrastructure = await kube.get<KubeObject & { status?: { apiServerURL?: string } }>(INFRASTRUCTURE_CONFIG);
  const url = infrastructure?.status?.apiServerURL;
  const current =
    (url ? /^api\.([^.]+)\./.exec(new URL(url).hostname)?.[1] : undefined) ??
    /^apps\.([^.]+)\./.exec(ingress.spec?.domain ?? '')?.[1];
  if (siteName !== undefined && current !== undefined && siteName !== current)
    throw new RefusedError(
      `spec.clusterName is ${siteName}, but the cluster is named ${current}: renaming the cluster is not supported; leave clusterName out or set it to ${current}`,
    );
  const name = siteName ?? current;
  if (name === undefined)
    throw new StepError(
      `cannot tell the cluster's name from ingress domain ${ingress.spec?.domain ?? '(none)'}: set spec.clusterName in the site-config`,
    );
  return name;
}

/** Flattened `path: value` lines of a JSON value, for plan diffs. */
function flatten(value: unknown, prefix: string, out: Map<string, string>): void {
  if (value !== null && typeof value === 'object' && !(Array.isArray(value) && value.length === 0)) {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [`[${i}]`, v] as const)
      : Object.entries(value).map(([k, v]) => [prefix ? `.${k}` : k, v] as const);
    if (entries.length === 0) out.set(prefix, '{}');
    for (const [key, v] of entries) flatten(v, `${prefix}${key}`, out);
    return;
  }
  out.set(prefix, JSON.stringify(value));
}

/** `- path: old` / `+ path: new` lines for what differs between two JSON values; [] when equal. */
export function diffLines(before: unknown, after: unknown, prefix = ''): string[] {
  if (isDeepStrictEqual(before, after)) return [];
  const a = new Map<string, string>();
  const b = new Map<string, string>();
  if (before !== undefined) flatten(before, prefix, a);
  if (after !== undefined) flatten(after, prefix, b);
  const lines: string[] = [];
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const old = a.get(key);
    const now = b.get(key);
    if (old === now) continue;
    if (old !== undefined) lines.push(`- ${key}: ${old}`);
    if (now !== undefined) lines.push(`+ ${key}: ${now}`);
  }
  return lines;
}

export interface SiteDomains {
  cluster: string;
  /** apps.<cluster>.<baseDomain> */
  apps: string;
  /** api.<cluster>.<baseDomain> */
  api: string;
}

/** The component routes OpenShift lets a cluster admin rename, and the secret each is served with. */
export const COMPONENT_ROUTES = [
  {
    namespace: 'openshift-console',
    name: 'console',
    host: 'console-openshift-console',
    secret: `${SECRET_PREFIX}console`,
  },
  {
    namespace: 'openshift-console',
    name: 'downloads',
    host: 'downloads-openshift-console',
    secret: `${SECRET_PREFIX}downloads`,
  },
  {
    namespace: 'openshift-authentication',
    name: 'oauth-openshift',
    host: 'oauth-openshift',
    secret: `${SECRET_PREFIX}oauth`,
  },
] as const;

/** The most characters a host name may have (RFC 1123; the Route CRD's spec.host maxLength). */
const MAX_HOST = 253;

/**
 * Why the site's names cannot be hosts, or undefined. The longest is the API's name or a component
 * route's host under the apps domain; a longer one is refused by the Route CRD half way through a run.
 */
export function siteHostsProblem(domains: SiteDomains): string | undefined {
  const hosts = [domains.api, ...COMPONENT_ROUTES.map((r) => `${r.host}.${domains.apps}`)];
  const longest = hosts.reduce((a, b) => (b.length > a.length ? b : a));
  return longest.length > MAX_HOST
    ? `${longest.slice(0, 40)}... would be ${longest.length} characters, over the ${MAX_HOST} a host name may have`
    : undefined;
}

export async function siteDomains(
  kube: Kube,
  site: { clusterName?: string; baseDomain: string },
  ingress: IngressConfig,
): Promise<SiteDomains> {
  return domainsOf(await clusterName(kube, site.clusterName, ingress), site.baseDomain);
}

/** The cluster's names under a base domain. */
export function domainsOf(cluster: string, baseDomain: string): SiteDomains {
  return { cluster, apps: `apps.${cluster}.${baseDomain}`, api: `api.${cluster}.${baseDomain}` };
}

/**
 * Apps domains the routes may still use. spec.domain never changes (OpenShift forbids it), but a
 * node relocated before moved its routes to an appsDomain that the next relocation replaces; the
 * domain step writes that one down here before it changes the ingress config, so the routes step
 * finds it on a rerun even though the ingress config no longer shows it.
 */
const APPS_DOMAINS_FILE = 'previous-apps-domains.json';
export const appsDomainsFile = (stateDir: string): string => path.join(stateDir, APPS_DOMAINS_FILE);

async function rememberedAppsDomains(fs: RootFs, stateDir: string): Promise<string[]> {
  const file = appsDomainsFile(stateDir);
  return (await readJsonFile(fs, file, { what: 'remembered apps domains', schema: z.array(z.string()) })) ?? [];
}

export async function rememberAppsDomain(fs: RootFs, stateDir: string, domain: string): Promise<void> {
  const known = await rememberedAppsDomains(fs, stateDir);
  if (known.includes(domain)) return;
  await fs.mkdirp(stateDir, 0o700);
  await fs.writeAtomic(appsDomainsFile(stateDir), `${JSON.stringify([...known, domain])}\n`, {
    mode: 0o644,
  });
}

/** Every apps domain routes may have been created under, except the site's. */
export async function oldAppsDomains(
  fs: RootFs,
  stateDir: string,
  ingress: IngressConfig,
  newDomain: string,
): Promise<string[]> {
  const candidates = [ingress.spec?.domain, ingress.spec?.appsDomain, ...(await rememberedAppsDomains(fs, stateDir))];
  return [...new Set(candidates.filter((d): d is string => !!d && d !== newDomain))];
}
