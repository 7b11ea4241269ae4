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
import { isDeepStrictEqual } from 'node:util';
import { ensureSiteCa, loadSiteCa, servingProblem, siteCaGiven, type SiteCa } from '../certs/site-certs.js';
import { installerIssuers, installerSignersInput } from '../config/ibi/signers.js';
import type { Site } from '../config/site.js';
import type { Change, PlanResult } from '../engine/step.js';
import {
  APISERVER_CONFIG,
  appsDomainsFile,
  diffLines,
  INGRESS_CONFIG,
  INGRESS_CONTROLLER,
  readIngressConfig,
  rememberAppsDomain,
  siteDomains,
  siteHostsProblem,
  type APIServerConfig,
  type IngressConfig,
  type NamedCertificate,
  type RouteObject,
  type SecretObject,
  type SiteDomains,
} from '../kube/openshift.js';
import { describeRef } from '../ports/kube.js';
import type { Step } from './step.js';
import {
  API_SECRET,
  APPS_SECRET,
  givenProblem,
  pairIn,
  secretKey,
  secretRef,
  wantedSecrets,
  type WantedSecret,
} from './domain/certificates.js';
import { mergeNamedCertificates, namedCertificateProblem } from './domain/named-certificate.js';
import { mergeIngress, operatorRoutes, pendingRoutes, type IngressControllerObject } from './domain/router.js';
import { secretWrite, writeSecrets, type SecretWrite } from './domain/issuing.js';
import { admitted, isOAuth, served } from './domain/waits.js';

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
  /** where the apps domains the routes may still use are kept (kube/openshift.ts) */
  appsDomainsFile: string;
  /** the installer's signers from image-based config media, when the media carries them */
  signers: { api?: SiteCa; apps?: SiteCa };
  /** the time certificates are judged at */
  now: Date;
}

/**
 * What apply does, in this order. It holds keys (the site's pairs, the issuers'): the engine never
 * shows a decision, and apply logs none of it.
 */
export interface DomainDecision {
  /** the site's names: ingress.config and apiserver.config merge them into the objects as they are then */
  domains: SiteDomains;
  /** the time the certificates are issued at (ISO 8601) */
  now: string;
  /** the site CA generated in the state folder first, for the site's name */
  createCa?: { dir: string; siteName: string };
  secrets: SecretWrite[];
  /** the apps domain the ingress config names now, written down for the routes step before it changes */
  rememberAppsDomain?: string;
  /** the IngressController's default certificate set to the router's secret */
  routerCertificate: boolean;
  /** the agent's named certificate changes: written once the OAuth route is admitted on its new host */
  namedCertificate: boolean;
}

interface Judged {
  /** operators' routes not yet admitted on their new host */
  pendingRoutes: ReturnType<typeof pendingRoutes>;
  /** secrets to write, with why */
  stale: { want: WantedSecret; exists: boolean; why: string }[];
  conflicts: string[];
  ingressSpec: NonNullable<IngressConfig['spec']>;
  namedCertificates: NamedCertificate[];
}

const wantedFor = (view: DomainView, site: Site): WantedSecret[] =>
  wantedSecrets(view.domains, view.ingress.spec!.domain!, site.certificates).map((w) => {
    const signer = w.name === API_SECRET ? view.signers.api : view.signers.apps;
    return signer ? { ...w, signer } : w;
  });
function decide(view: DomainView, site: Site): Judged {
  const { domains, ingressController, now, ca } = view;
  const s: Judged = {
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

function planOf(view: DomainView, site: Site): PlanResult<DomainDecision> {
  const s = decide(view, site);
  if (s.conflicts.length > 0) return { action: 'conflict', reason: s.conflicts.join('; ') };
  const changes: Change[] = [];
  const secrets = s.stale.map((x) => secretWrite(x.want, x.exists, view.ca));
  const createCa = secrets.some((w) => !w.pair && !w.issuer);
  if (createCa) {
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
  // before the ingress config moves: the routes step must still find routes under the old domain
  const previous = view.ingress.spec?.appsDomain;
  const rememberAppsDomain = previous && previous !== view.domains.apps ? previous : undefined;
  const ingressDiff = diffLines(view.ingress.spec, s.ingressSpec, 'spec');
  if (rememberAppsDomain)
    changes.push({
      action: 'update',
      target: view.appsDomainsFile,
      summary: `${rememberAppsDomain} kept: the routes step still moves routes left under it`,
    });
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
  const routerCertificate = view.ingressController?.spec?.defaultCertificate?.name !== APPS_SECRET;
  if (routerCertificate)
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
  return {
    action: 'change',
    summary: `move the cluster to ${view.domains.apps} and ${view.domains.api}`,
    changes,
    decision: {
      domains: view.domains,
      now: view.now.toISOString(),
      ...(createCa && { createCa: { dir: view.caDir, siteName: site.name } }),
      secrets,
      ...(rememberAppsDomain && { rememberAppsDomain }),
      routerCertificate,
      namedCertificate: !isDeepStrictEqual(currentNamed, s.namedCertificates),
    },
  };
}

export const domainStep: Step<DomainView, DomainDecision> = {
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
    const ca = siteCaGiven(ctx.site.access?.siteCa) ?? (await loadSiteCa(ctx.fs, ctx.stateDir, now));
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
      appsDomainsFile: appsDomainsFile(ctx.stateDir),
      signers: await installerIssuers(ctx.site, now),
      now,
    };
  },

  plan: planOf,

  async apply(ctx, decision) {
    const kube = await ctx.kube();
    const { domains, createCa } = decision;
    const now = new Date(decision.now);
    const created = createCa && (await ensureSiteCa(ctx.fs, ctx.stateDir, createCa.siteName, now));
    if (created) ctx.log.info({ caDir: createCa.dir, subject: created.cert.subject }, 'site CA created');
    await writeSecrets(ctx, kube, decision.secrets, now, created);
    if (decision.rememberAppsDomain) await rememberAppsDomain(ctx.fs, ctx.stateDir, decision.rememberAppsDomain);
    // the writes that roll out control-plane components, back to back: ingress.config (the
    // openshift-apiserver, then the operators' routes and the OAuth metadata revision), the router,
    // and the kube-apiserver's named certificate (its revision). Each merges the decision's names
    // into the object as it is then (read-modify-write), so a field another tool set meanwhile stays
    await kube.update<IngressConfig>(INGRESS_CONFIG, (current) => {
      const spec = mergeIngress(current.spec ?? {}, domains);
      return isDeepStrictEqual(spec, current.spec) ? undefined : { ...current, spec };
    });
    if (decision.routerCertificate)
      await kube.update<IngressControllerObject>(INGRESS_CONTROLLER, (current) =>
        current.spec?.defaultCertificate?.name === APPS_SECRET
          ? undefined
          : { ...current, spec: { ...current.spec, defaultCertificate: { name: APPS_SECRET } } },
      );
    // the OAuth route admitted on its new host is the OAuth metadata's new issuer, a kube-apiserver
    // revision of its own (auth_metadata.go); the named certificate right after it (polled closely)
    // lands while that revision's installer still works, so the node restarts its API server once for both
    if (decision.namedCertificate) await admitted(ctx, domains, isOAuth, { intervalMs: 500, maxIntervalMs: 500 });
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
  async settle(ctx, { domains }) {
    await admitted(ctx, domains, () => true, { intervalMs: 1000, maxIntervalMs: 5000 });
    await served(ctx, domains);
  },
};
