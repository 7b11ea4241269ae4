/**
 * [domain] The cluster answers under the site's domain: serving certificates for console,
 * downloads, oauth and api as kubernetes.io/tls secrets in openshift-config, and the router's
 * default certificate (both the factory's and the site's apps wildcards) in openshift-ingress; the
 * site's own files, or signed by a site CA kept in the state folder. Then the writes that roll out a
 * control-plane component, each once (docs/rollouts.md): ingress.config/cluster gets the new
 * appsDomain and componentRoutes pointing at the secrets (the openshift-apiserver rolls out; the
 * console and authentication operators move their routes), the IngressController default gets the
 * router certificate (the router rolls out), and, once the OAuth route is admitted on its new host
 * (which changes the OAuth metadata, a kube-apiserver input), apiserver.config/cluster gets a
 * namedCertificate for api.<cluster>.<baseDomain>: both land in one kube-apiserver revision.
 * Entries other tools put in those lists stay: the agent's own are told by their secret's name
 * prefix and are replaced, never duplicated; a list the kube-apiserver operator would refuse (more
 * than 10 entries, or the API name held by another entry) is refused here.
 * Settles by waiting, bounded by --health-timeout, for the operators' routes admitted on their new
 * hosts, then for the API and the router (console, OAuth) to serve, through the site's names, what
 * verifies against the site's CA bundle.
 */
import { X509Certificate } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { CertificatePair } from '../config/site.js';
import {
  ensureSiteCa,
  loadSiteCa,
  issueServing,
  servingProblem,
  servingWindow,
  siteCaGiven,
  type SiteCa,
} from '../certs/site-certs.js';
import { certificatesIn } from '../base/pem.js';
import { installerIssuers, installerSignersInput } from '../config/ibi/signers.js';
import { matchesKey, parseKey } from '../certs/key-types.js';
import { VerificationError } from '../base/errors.js';
import type { Change, PlanResult } from '../engine/step.js';
import type { Site } from '../config/site.js';
import type { Step, StepContext } from './step.js';
import { pollUntil } from '../ports/clock.js';
import { clusterNames } from '../node/dnsmasq.js';
import { siteTrust } from '../node/served.js';
import { checkServedNames, nameservers } from '../node/site-names-check.js';
import {
  admittedFor,
  APISERVER_CONFIG,
  COMPONENT_ROUTES,
  CONFIG_NAMESPACE,
  INGRESS_CONTROLLER,
  OPERATOR_ROUTES,
  ROUTE_API,
  ROUTER_NAMESPACE,
  type RouteObject,
  diffLines,
  INGRESS_CONFIG,
  managedLabels,
  readIngressConfig,
  rememberAppsDomain,
  SECRET_PREFIX,
  siteDomains,
  siteHostsProblem,
  type APIServerConfig,
  type ComponentRoute,
  type IngressConfig,
  type NamedCertificate,
  type SecretObject,
  type SiteDomains,
} from '../kube/openshift.js';
import { describeRef, type Kube, type KubeObject } from '../ports/kube.js';

interface WantedSecret {
  name: string;
  namespace: string;
  /** DNS names the certificate must serve */
  names: string[];
  /** the site's own pair; otherwise the site CA signs one */
  given?: CertificatePair;
  /** which site-config field the given pair came from */
  field?: string;
  /** the installer's signer from image-based config media, instead of the site CA */
  signer?: SiteCa;
}

export const API_SECRET = `${SECRET_PREFIX}api`;
/** the router's default certificate, in openshift-ingress */
export const APPS_SECRET = `${SECRET_PREFIX}apps-wildcard`;
/** the kube-apiserver operator refuses a longer namedCertificates list (observe_apiserver.go) */
export const MAX_NAMED_CERTIFICATES = 10;

/**
 * The secrets the site's domain needs. The router's default certificate covers the factory's apps
 * domain too: the IngressController keeps its domain, and the routes left under it (the canary, the
 * operators' default routes) are still served. A site's own ingress certificate serves as it is.
 */
export function wantedSecrets(
  domains: SiteDomains,
  factoryApps: string,
  given: { ingress?: CertificatePair; api?: CertificatePair },
): WantedSecret[] {
  const ingress = given.ingress && { given: given.ingress, field: 'spec.certificates.ingress' };
  const wildcards = [...new Set([domains.apps, factoryApps])].map((d) => `*.${d}`);
  return [
    { name: APPS_SECRET, namespace: ROUTER_NAMESPACE, names: ingress ? [`*.${domains.apps}`] : wildcards, ...ingress },
    ...COMPONENT_ROUTES.map((r) => ({
      name: r.secret,
      namespace: CONFIG_NAMESPACE,
      names: [`${r.host}.${domains.apps}`],
      ...ingress,
    })),
    {
      name: API_SECRET,
      namespace: CONFIG_NAMESPACE,
      names: [domains.api],
      ...(given.api && { given: given.api, field: 'spec.certificates.api' }),
    },
  ];
}

/** Why the kube-apiserver operator would refuse the merged list, or undefined. */
export function namedCertificateProblem(merged: readonly NamedCertificate[], domains: SiteDomains): string | undefined {
  const field = 'apiserver.config spec.servingCerts.namedCertificates';
  const holder = merged.find(
    (c) => !c.servingCertificate.name.startsWith(SECRET_PREFIX) && (c.names ?? []).includes(domains.api),
  );
  if (holder)
    return `${field}: the entry for secret ${holder.servingCertificate.name} already names ${domains.api}, and the kube-apiserver operator refuses a name held by two entries: remove ${domains.api} from that entry`;
  if (merged.length > MAX_NAMED_CERTIFICATES)
    return `${field}: ${merged.length} entries with the site's, and the kube-apiserver operator accepts at most ${MAX_NAMED_CERTIFICATES}: remove ${merged.length - MAX_NAMED_CERTIFICATES} of the others`;
  return undefined;
}

interface IngressControllerObject extends KubeObject {
  spec?: { defaultCertificate?: { name?: string }; [field: string]: unknown };
}

/** The operators' routes that move with the componentRoutes, and the host each must be admitted at. */
const movedByOperators = (domains: SiteDomains) =>
  OPERATOR_ROUTES.flatMap((r) => (r.host ? [{ ...r, wanted: `${r.host}.${domains.apps}` }] : []));

export function wantedComponentRoutes(domains: SiteDomains): ComponentRoute[] {
  return COMPONENT_ROUTES.map((r) => ({
    namespace: r.namespace,
    name: r.name,
    hostname: `${r.host}.${domains.apps}`,
    servingCertKeyPairSecret: { name: r.secret },
  }));
}

/** The ingress spec with the site's appsDomain and component routes; other component routes kept in place. */
export function mergeIngress(
  spec: NonNullable<IngressConfig['spec']>,
  domains: SiteDomains,
): NonNullable<IngressConfig['spec']> {
  const ours = wantedComponentRoutes(domains);
  const key = (r: { namespace: string; name: string }) => `${r.namespace}/${r.name}`;
  const wanted = new Map(ours.map((r) => [key(r), r]));
  const merged = (spec.componentRoutes ?? []).map((r) => wanted.get(key(r)) ?? r);
  for (const r of ours) if (!merged.some((m) => key(m) === key(r))) merged.push(r);
  return { ...spec, appsDomain: domains.apps, componentRoutes: merged };
}

/** namedCertificates with the agent's entries replaced by the one for the site's API name; others kept. */
export function mergeNamedCertificates(current: readonly NamedCertificate[], domains: SiteDomains): NamedCertificate[] {
  return [
    ...current.filter((c) => !c.servingCertificate.name.startsWith(SECRET_PREFIX)),
    { names: [domains.api], servingCertificate: { name: API_SECRET } },
  ];
}

const secretRef = (name: string, namespace: string) => ({ apiVersion: 'v1', kind: 'Secret', name, namespace });

function pairIn(secret: SecretObject | undefined): CertificatePair | undefined {
  const crt = secret?.data?.['tls.crt'];
  const key = secret?.data?.['tls.key'];
  if (!crt || !key) return undefined;
  return { certPem: Buffer.from(crt, 'base64').toString('utf8'), keyPem: Buffer.from(key, 'base64').toString('utf8') };
}

/** Why the site's own pair cannot serve these names; undefined when it can. */
function givenProblem(want: WantedSecret): string | undefined {
  try {
    const leaf = certificatesIn(want.given!.certPem)[0];
    if (!leaf) return `${want.field}: no certificate in the file`;
    if (!matchesKey(leaf, parseKey(want.given!.keyPem))) return `${want.field}: the key does not match the certificate`;
    const uncovered = want.names.filter(
      (n) => (n.startsWith('*.') ? leaf.checkHost(`x${n.slice(1)}`) : leaf.checkHost(n)) === undefined,
    );
    if (uncovered.length > 0) return `${want.field}: the certificate does not cover ${uncovered.join(', ')}`;
  } catch {
    return `${want.field}: the certificate or key cannot be read`;
  }
  return undefined;
}

/** What the step reads: the cluster's config objects, the secrets, the operators' routes, the site CA. */
export interface DomainView {
  domains: SiteDomains;
  ingress: IngressConfig;
  apiserver?: APIServerConfig;
  ingressController?: IngressControllerObject;
  /** the wanted secrets as the cluster holds them, by `namespace/name` */
  secrets: Record<string, SecretObject>;
  /** routes in the operators' namespaces */
  routes: RouteObject[];
  /** the site's own CA, or the one generated on the node; undefined before the first run */
  ca?: SiteCa;
  /** where a generated site CA is kept */
  caDir: string;
  /** the installer's signers from image-based config media, when the media carries them */
  signers: { api?: SiteCa; apps?: SiteCa };
  /** the time certificates are judged at */
  now: Date;
}

interface Decision {
  /** operators' routes not yet admitted on their new host */
  pendingRoutes: ReturnType<typeof movedByOperators>;
  /** secrets to write, with why */
  stale: { want: WantedSecret; exists: boolean; why: string }[];
  conflicts: string[];
  ingressSpec: NonNullable<IngressConfig['spec']>;
  namedCertificates: NamedCertificate[];
}

const secretKey = (w: { namespace: string; name: string }) => `${w.namespace}/${w.name}`;
const wantedFor = (view: DomainView, site: Site): WantedSecret[] =>
  wantedSecrets(view.domains, view.ingress.spec!.domain!, site.certificates).map((w) => {
    const signer = w.name === API_SECRET ? view.signers.api : view.signers.apps;
    return signer ? { ...w, signer } : w;
  });
const pendingRoutes = (domains: SiteDomains, routes: readonly RouteObject[]) =>
  movedByOperators(domains).filter((r) => !admittedFor(routes, r.wanted));

function decide(view: DomainView, site: Site): Decision {
  const { domains, ingressController, now, ca } = view;
  const s: Decision = {
    pendingRoutes: pendingRoutes(domains, view.routes),
    stale: [],
    conflicts: [],
    ingressSpec: mergeIngress(view.ingress.spec ?? {}, domains),
    namedCertificates: mergeNamedCertificates(view.apiserver?.spec?.servingCerts?.namedCertificates ?? [], domains),
  };
  if (!view.apiserver) s.conflicts.push('apiserver.config.openshift.io/cluster does not exist');
  const named = namedCertificateProblem(s.namedCertificates, domains);
  if (named) s.conflicts.push(named);
  const tooLong = siteHostsProblem(domains);
  if (tooLong) s.conflicts.push(`spec.baseDomain with the cluster's name ${domains.cluster}: ${tooLong}`);
  if (!ingressController)
    s.conflicts.push(
      `${describeRef(INGRESS_CONTROLLER)} not found: the router's default certificate cannot be set without the ingress operator's IngressController`,
    );
  const foreign = ingressController?.spec?.defaultCertificate?.name;
  if (foreign && foreign !== APPS_SECRET)
    s.conflicts.push(
      `${describeRef(INGRESS_CONTROLLER)} spec.defaultCertificate names secret ${foreign}, which is not the agent's: remove it to let the agent serve the site's certificate`,
    );
  for (const want of wantedFor(view, site)) {
    const current = view.secrets[secretKey(want)];
    const pair = pairIn(current);
    if (want.given) {
      const problem = givenProblem(want);
      if (problem) s.conflicts.push(problem);
      else if (!pair || pair.certPem !== want.given.certPem || pair.keyPem !== want.given.keyPem)
        s.stale.push({ want, exists: !!current, why: `the site's certificate from ${want.field}` });
      continue;
    }
    const problem = pair ? servingProblem(pair, want.names, want.signer ?? ca, now) : 'missing';
    const by = want.signer ? `the installer's ${want.signer.cert.subject.replace(/\n/g, ', ')}` : 'the site CA';
    if (problem)
      s.stale.push({
        want,
        exists: !!current,
        why: `signed by ${by} for ${want.names.join(', ')}${pair ? ` (${problem})` : ''}`,
      });
  }
  return s;
}

function planOf(view: DomainView, site: Site): PlanResult {
  const s = decide(view, site);
  if (s.conflicts.length > 0) return { action: 'conflict', reason: s.conflicts.join('; ') };
  const changes: Change[] = [];
  if (!view.ca && s.stale.some((x) => !x.want.given && !x.want.signer)) {
    changes.push({
      action: 'create',
      target: view.caDir,
      summary: `site CA for ${site.name} (key 0600, kept for reruns)`,
    });
  }
  for (const x of s.stale) {
    changes.push({
      action: x.exists ? 'update' : 'create',
      target: `Secret ${x.want.namespace}/${x.want.name}`,
      summary: `kubernetes.io/tls, ${x.why}; key not shown`,
    });
  }
  const ingressDiff = diffLines(view.ingress.spec, s.ingressSpec, 'spec');
  if (ingressDiff.length > 0)
    changes.push({
      action: 'update',
      target: 'Ingress.config.openshift.io cluster',
      summary: `appsDomain ${view.domains.apps} and component routes`,
      diff: ingressDiff,
      // the new routing subdomain rolls the openshift-apiserver out; the OAuth server rolls out for the
      // componentRoute's certificate, then for its new issuer once the new router admits its route
      rollouts: ['openshift-apiserver', 'oauth-server', 'oauth-server'],
    });
  if (view.ingressController?.spec?.defaultCertificate?.name !== APPS_SECRET)
    changes.push({
      action: 'update',
      target: describeRef(INGRESS_CONTROLLER),
      summary: `the router serves ${APPS_SECRET} (restarts the router)`,
      rollouts: ['router'],
      diff: diffLines(
        view.ingressController?.spec?.defaultCertificate,
        { name: APPS_SECRET },
        'spec.defaultCertificate',
      ),
    });
  const currentNamed = view.apiserver?.spec?.servingCerts?.namedCertificates ?? [];
  const namedDiff = diffLines(currentNamed, s.namedCertificates, 'spec.servingCerts.namedCertificates');
  if (namedDiff.length > 0)
    changes.push({
      action: 'update',
      target: 'APIServer.config.openshift.io cluster',
      summary: `named certificate for ${view.domains.api}, written once the OAuth route is on its new host: one kube-apiserver revision for both`,
      diff: namedDiff,
      rollouts: ['kube-apiserver'],
    });
  for (const r of s.pendingRoutes)
    changes.push({
      action: 'update',
      target: `Route ${r.namespace}/${r.name}`,
      summary: `moved by ${r.operator} through its componentRoute, never patched; waits until admitted`,
      diff: [`+ admitted host: ${r.wanted}`],
    });
  if (changes.length === 0)
    return {
      action: 'noop',
      reason: `the cluster already serves ${view.domains.apps} and ${view.domains.api} with the site's certificates`,
    };
  return { action: 'change', summary: `move the cluster to ${view.domains.apps} and ${view.domains.api}`, changes };
}

/**
 * The operators' namespaces only (their routes and the custom ones they add, console-custom), not
 * every route of the cluster: a thousand routes are a megabyte the API server reads and encodes.
 */
async function operatorRoutes(kube: Kube): Promise<RouteObject[]> {
  const namespaces = [...new Set(OPERATOR_ROUTES.map((r) => r.namespace))];
  return (
    await Promise.all(namespaces.map((namespace) => kube.list<RouteObject>(ROUTE_API, 'Route', { namespace })))
  ).flat();
}

function tlsSecret(name: string, namespace: string, pair: CertificatePair): SecretObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, labels: { ...managedLabels } },
    type: 'kubernetes.io/tls',
    data: {
      'tls.crt': Buffer.from(pair.certPem).toString('base64'),
      'tls.key': Buffer.from(pair.keyPem).toString('base64'),
    },
  };
}

async function writeSecret(kube: Kube, secret: SecretObject, exists: boolean): Promise<void> {
  const ref = secretRef(secret.metadata.name, secret.metadata.namespace!);
  if (!exists || !(await kube.get(ref))) {
    try {
      await kube.create(secret);
      return;
    } catch (err) {
      // created meanwhile (a retried create whose first answer was lost): replace it below
      if (!(await kube.get(ref))) throw err;
    }
  }
  await kube.update<SecretObject>(ref, (current) => ({
    ...current,
    type: secret.type,
    data: secret.data,
    metadata: { ...current.metadata, labels: { ...current.metadata.labels, ...managedLabels } },
  }));
}

export const domainStep: Step<DomainView> = {
  name: 'domain',
  group: 'cluster',
  description:
    "site CA, serving and router certificates; then `ingress.config` componentRoutes and appsDomain, the IngressController's default certificate, and `apiserver.config` namedCertificates once the OAuth route is on its new host (one kube-apiserver revision); waits for the operators' routes",
  inputs: (site) => ({
    baseDomain: site.baseDomain,
    clusterName: site.clusterName ?? null,
    certificates: site.certificates,
    ...(site.imageBased && { installerSigners: installerSignersInput(site) }),
  }),

  async survey(ctx) {
    const kube = await ctx.kube();
    const now = ctx.clock.now();
    const ingress = await readIngressConfig(kube);
    const apiserver = await kube.get<APIServerConfig>(APISERVER_CONFIG);
    const domains = await siteDomains(kube, ctx.site, ingress);
    // the site's own CA when the site-config gives one; otherwise the one generated on the node
    const ca = siteCaGiven(ctx.site) ?? (await loadSiteCa(ctx.fs, ctx.stateDir, now));
    const wanted = wantedSecrets(domains, ingress.spec!.domain!, ctx.site.certificates);
    const secrets: Record<string, SecretObject> = {};
    await Promise.all(
      wanted.map(async (w) => {
        const secret = await kube.get<SecretObject>(secretRef(w.name, w.namespace));
        if (secret) secrets[secretKey(w)] = secret;
      }),
    );
    const ingressController = (await kube.serves(INGRESS_CONTROLLER.apiVersion, INGRESS_CONTROLLER.kind))
      ? await kube.get<IngressControllerObject>(INGRESS_CONTROLLER)
      : undefined;
    return {
      domains,
      ingress,
      ...(apiserver && { apiserver }),
      ...(ingressController && { ingressController }),
      secrets,
      routes: await operatorRoutes(kube),
      ...(ca && { ca }),
      caDir: `${ctx.stateDir}/site-ca`,
      signers: await installerIssuers(ctx.site, now),
      now,
    };
  },

  plan: planOf,

  async apply(ctx, view) {
    const kube = await ctx.kube();
    const s = decide(view, ctx.site);
    const { now, domains } = view;
    const ca = s.stale.some((x) => !x.want.given && !x.want.signer)
      ? (view.ca ?? (await ensureSiteCa(ctx.fs, ctx.stateDir, ctx.site.name, now)))
      : view.ca;
    if (!view.ca && ca) ctx.log.info({ caDir: view.caDir, subject: ca.cert.subject }, 'site CA created');
    // a certificate never outlives its issuer: an issuer that ends soon is said on the console
    const issuers = new Set(s.stale.flatMap((x) => (x.want.given ? [] : [x.want.signer ?? ca!])));
    const ending = [...issuers].flatMap((issuer) => servingWindow(issuer, now).warning ?? []);
    for (const warning of ending) {
      ctx.log.warn({ warning }, warning);
      await ctx.console?.(`WARN ${warning}`);
    }
    await Promise.all(
      s.stale.map(async (x) => {
        const pair = x.want.given ?? (await issueServing(x.want.names, x.want.signer ?? ca!, now));
        await writeSecret(kube, tlsSecret(x.want.name, x.want.namespace, pair), x.exists);
        ctx.log.info(
          {
            secret: `${x.want.namespace}/${x.want.name}`,
            names: x.want.names,
            serial: new X509Certificate(pair.certPem).serialNumber,
          },
          `secret ${x.want.name} written`,
        );
      }),
    );
    // before the ingress config moves: the routes step must still find routes under the old domain
    const previous = view.ingress.spec?.appsDomain;
    if (previous && previous !== domains.apps) await rememberAppsDomain(ctx.fs, ctx.stateDir, previous);
    // the writes that roll out control-plane components, back to back: ingress.config (the
    // openshift-apiserver, then the operators' routes and the OAuth metadata revision), the router,
    // and the kube-apiserver's named certificate (its revision)
    await kube.update<IngressConfig>(INGRESS_CONFIG, (current) => {
      const spec = mergeIngress(current.spec ?? {}, domains);
      return isDeepStrictEqual(spec, current.spec) ? undefined : { ...current, spec };
    });
    await kube.update<IngressControllerObject>(INGRESS_CONTROLLER, (current) =>
      current.spec?.defaultCertificate?.name === APPS_SECRET
        ? undefined
        : { ...current, spec: { ...current.spec, defaultCertificate: { name: APPS_SECRET } } },
    );
    // the OAuth route admitted on its new host is the OAuth metadata's new issuer, a kube-apiserver
    // revision of its own (auth_metadata.go); the named certificate right after it (polled closely)
    // lands while that revision's installer still works, so the node restarts its API server once for both
    const named = view.apiserver?.spec?.servingCerts?.namedCertificates ?? [];
    if (!isDeepStrictEqual(named, s.namedCertificates))
      await admitted(ctx, domains, isOAuth, { intervalMs: 500, maxIntervalMs: 500 });
    await kube.update<APIServerConfig>(APISERVER_CONFIG, (current) => {
      const named = current.spec?.servingCerts?.namedCertificates ?? [];
      const merged = mergeNamedCertificates(named, domains);
      if (isDeepStrictEqual(named, merged)) return undefined;
      return {
        ...current,
        spec: { ...current.spec, servingCerts: { ...current.spec?.servingCerts, namedCertificates: merged } },
      };
    });
  },

  /**
   * the operators move their routes on their own time, through rollouts of the API servers; then
   * what is stored must be what is served
   */
  async settle(ctx) {
    const kube = await ctx.kube();
    const domains = await siteDomains(kube, ctx.site, await readIngressConfig(kube));
    await admitted(ctx, domains, () => true, { intervalMs: 1000, maxIntervalMs: 5000 });
    await served(ctx, domains);
  },
};

const isOAuth = (r: { namespace: string }) => r.namespace === 'openshift-authentication';

/** Waits, bounded by --health-timeout, until the operators' routes `which` picks are admitted on their new hosts. */
async function admitted(
  ctx: StepContext,
  domains: SiteDomains,
  which: (r: { namespace: string; name: string }) => boolean,
  poll: { intervalMs: number; maxIntervalMs: number },
): Promise<void> {
  const kube = await ctx.kube();
  let pending: ReturnType<typeof pendingRoutes> = [];
  const settled = await pollUntil(
    ctx.clock,
    async () => {
      const before = pending.length;
      pending = pendingRoutes(domains, await operatorRoutes(kube)).filter(which);
      // said while the router and the operators roll out: status shows it as the step's detail
      if (pending.length > 0 && pending.length !== before)
        await ctx.progress?.(
          `waiting for ${pending.map((r) => `Route ${r.namespace}/${r.name}`).join(', ')} to be admitted on the site's domain (the router rolls out for its new certificate)`,
        );
      return pending.length === 0 ? true : undefined;
    },
    { timeoutMs: ctx.options.healthTimeoutSeconds * 1000, ...poll },
  );
  if (!settled)
    throw new VerificationError(
      `domain: not admitted on the new host after ${ctx.options.healthTimeoutSeconds}s: ${pending.map((r) => `Route ${r.namespace}/${r.name} at ${r.wanted} (${r.operator})`).join('; ')}`,
      { step: 'domain', retryable: true },
    );
}

/**
 * Waits, bounded by --health-timeout, until what the API server and the router serve through the
 * site's names (where the node resolves them) verifies against the site's CA bundle: the router
 * restarts for its new certificate, the API server takes its named certificate in a revision.
 */
async function served(ctx: StepContext, domains: SiteDomains): Promise<void> {
  const nodeServers = nameservers(await ctx.fs.readText('/etc/resolv.conf'));
  if (nodeServers.length === 0) return;
  const names = clusterNames(`${domains.cluster}.${ctx.site.baseDomain}`);
  const trust = await siteTrust(ctx);
  let problems: string[] = [];
  const settled = await pollUntil(
    ctx.clock,
    async () => {
      problems = await checkServedNames(names, nodeServers, trust);
      return problems.length === 0 ? true : undefined;
    },
    { timeoutMs: ctx.options.healthTimeoutSeconds * 1000, intervalMs: 1000, maxIntervalMs: 5000 },
  );
  if (!settled)
    throw new VerificationError(
      `domain: the site's names do not serve the site's certificates after ${ctx.options.healthTimeoutSeconds}s: ${problems.join('; ')}`,
      { step: 'domain', retryable: true },
    );
}
