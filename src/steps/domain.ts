/**
 * [domain] The cluster answers under the site's domain: serving certificates for the apps
 * wildcard, console, downloads, oauth and api (the site's own files, or signed by a site CA kept in
 * the state folder), as kubernetes.io/tls secrets in openshift-config; ingress.config/cluster gets
 * the new appsDomain and componentRoutes pointing at them; apiserver.config/cluster gets a
 * namedCertificate for api.<cluster>.<baseDomain>. Entries other tools put in those lists stay: the
 * agent's own are told by their secret's name prefix and are replaced, never duplicated. Routes
 * follow in the next step.
 */
import { X509Certificate } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { CertificatePair } from '../config/site.js';
import {
  ensureSiteCa,
  loadSiteCa,
  issueServing,
  servingProblem,
  siteCaGiven,
  type SiteCa,
} from '../certs/site-certs.js';
import { certificatesIn, matchesKey, parseKey } from '../certs/x509.js';
import { VerificationError } from '../base/errors.js';
import type { Change, PlanResult } from '../engine/step.js';
import type { Step, StepContext } from '../config/site.js';
import {
  APISERVER_CONFIG,
  CONFIG_NAMESPACE,
  diffLines,
  INGRESS_CONFIG,
  managedLabels,
  readIngressConfig,
  rememberAppsDomain,
  SECRET_PREFIX,
  siteDomains,
  type APIServerConfig,
  type ComponentRoute,
  type IngressConfig,
  type NamedCertificate,
  type SecretObject,
  type SiteDomains,
} from '../kube/openshift.js';
import type { Kube } from '../ports/kube.js';

interface WantedSecret {
  name: string;
  /** DNS names the certificate must serve */
  names: string[];
  /** the site's own pair; otherwise the site CA signs one */
  given?: CertificatePair;
  /** which site-config field the given pair came from */
  field?: string;
}

/** The component routes OpenShift lets a cluster admin rename, and the secret each is served with. */
const COMPONENT_ROUTES = [
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
export const API_SECRET = `${SECRET_PREFIX}api`;
export const APPS_SECRET = `${SECRET_PREFIX}apps-wildcard`;

export function wantedSecrets(
  domains: SiteDomains,
  given: { ingress?: CertificatePair; api?: CertificatePair },
): WantedSecret[] {
  const ingress = given.ingress && { given: given.ingress, field: 'spec.certificates.ingress' };
  return [
    { name: APPS_SECRET, names: [`*.${domains.apps}`], ...ingress },
    ...COMPONENT_ROUTES.map((r) => ({ name: r.secret, names: [`${r.host}.${domains.apps}`], ...ingress })),
    { name: API_SECRET, names: [domains.api], ...(given.api && { given: given.api, field: 'spec.certificates.api' }) },
  ];
}

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

const secretRef = (name: string) => ({ apiVersion: 'v1', kind: 'Secret', name, namespace: CONFIG_NAMESPACE });

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

interface Survey {
  domains: SiteDomains;
  ingress: IngressConfig;
  apiserver: APIServerConfig;
  ca: SiteCa | undefined;
  /** secrets to write, with why */
  stale: { want: WantedSecret; exists: boolean; why: string }[];
  conflicts: string[];
  ingressSpec: NonNullable<IngressConfig['spec']>;
  namedCertificates: NamedCertificate[];
}

async function survey(ctx: StepContext, kube: Kube): Promise<Survey> {
  const now = ctx.clock.now();
  const ingress = await readIngressConfig(kube);
  const apiserver = await kube.get<APIServerConfig>(APISERVER_CONFIG);
  if (!apiserver)
    throw new VerificationError('apiserver.config.openshift.io/cluster does not exist', { step: 'domain' });
  const domains = await siteDomains(kube, ctx.site, ingress);
  // the site's own CA when the site-config gives one; otherwise the one generated on the node
  const ca = siteCaGiven(ctx.site) ?? (await loadSiteCa(ctx.fs, ctx.stateDir, now));
  const wanted = wantedSecrets(domains, ctx.site.certificates);
  const current = await Promise.all(wanted.map((w) => kube.get<SecretObject>(secretRef(w.name))));
  const s: Survey = {
    domains,
    ingress,
    apiserver,
    ca,
    stale: [],
    conflicts: [],
    ingressSpec: mergeIngress(ingress.spec ?? {}, domains),
    namedCertificates: mergeNamedCertificates(apiserver.spec?.servingCerts?.namedCertificates ?? [], domains),
  };
  for (const [i, want] of wanted.entries()) {
    const pair = pairIn(current[i]);
    if (want.given) {
      const problem = givenProblem(want);
      if (problem) s.conflicts.push(problem);
      else if (!pair || pair.certPem !== want.given.certPem || pair.keyPem !== want.given.keyPem)
        s.stale.push({ want, exists: !!current[i], why: `the site's certificate from ${want.field}` });
      continue;
    }
    const problem = pair ? servingProblem(pair, want.names, ca, now) : 'missing';
    if (problem)
      s.stale.push({
        want,
        exists: !!current[i],
        why: `signed by the site CA for ${want.names.join(', ')}${pair ? ` (${problem})` : ''}`,
      });
  }
  return s;
}

function planOf(ctx: StepContext, s: Survey): PlanResult {
  if (s.conflicts.length > 0) return { action: 'conflict', reason: s.conflicts.join('; ') };
  const changes: Change[] = [];
  if (!s.ca && s.stale.some((x) => !x.want.given)) {
    changes.push({
      action: 'create',
      target: `${ctx.stateDir}/site-ca`,
      summary: `site CA for ${ctx.site.name} (key 0600, kept for reruns)`,
    });
  }
  for (const x of s.stale) {
    changes.push({
      action: x.exists ? 'update' : 'create',
      target: `Secret ${CONFIG_NAMESPACE}/${x.want.name}`,
      summary: `kubernetes.io/tls, ${x.why}; key not shown`,
    });
  }
  const ingressDiff = diffLines(s.ingress.spec, s.ingressSpec, 'spec');
  if (ingressDiff.length > 0)
    changes.push({
      action: 'update',
      target: 'Ingress.config.openshift.io cluster',
      summary: `appsDomain ${s.domains.apps} and component routes`,
      diff: ingressDiff,
    });
  const currentNamed = s.apiserver.spec?.servingCerts?.namedCertificates ?? [];
  const namedDiff = diffLines(currentNamed, s.namedCertificates, 'spec.servingCerts.namedCertificates');
  if (namedDiff.length > 0)
    changes.push({
      action: 'update',
      target: 'APIServer.config.openshift.io cluster',
      summary: `named certificate for ${s.domains.api}`,
      diff: namedDiff,
    });
  if (changes.length === 0)
    return {
      action: 'noop',
      reason: `the cluster already serves ${s.domains.apps} and ${s.domains.api} with the site's certificates`,
    };
  return { action: 'change', summary: `move the cluster to ${s.domains.apps} and ${s.domains.api}`, changes };
}

function tlsSecret(name: string, pair: CertificatePair): SecretObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: CONFIG_NAMESPACE, labels: { ...managedLabels } },
    type: 'kubernetes.io/tls',
    data: {
      'tls.crt': Buffer.from(pair.certPem).toString('base64'),
      'tls.key': Buffer.from(pair.keyPem).toString('base64'),
    },
  };
}

async function writeSecret(kube: Kube, secret: SecretObject, exists: boolean): Promise<void> {
  const ref = secretRef(secret.metadata.name);
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

export const domainStep: Step = {
  name: 'domain',
  group: 'cluster',
  description:
    'site CA and serving certificates; `ingress.config` componentRoutes and appsDomain; `apiserver.config` namedCertificates merged',
  inputs: (site) => ({
    baseDomain: site.baseDomain,
    clusterName: site.clusterName ?? null,
    certificates: site.certificates,
  }),

  async plan(ctx) {
    return planOf(ctx, await survey(ctx, await ctx.kube()));
  },

  async apply(ctx) {
    const kube = await ctx.kube();
    const s = await survey(ctx, kube);
    const now = ctx.clock.now();
    const ca = s.stale.some((x) => !x.want.given)
      ? (s.ca ?? (await ensureSiteCa(ctx.fs, ctx.stateDir, ctx.site.name, now)))
      : s.ca;
    if (!s.ca && ca) ctx.log.info({ caDir: `${ctx.stateDir}/site-ca`, subject: ca.cert.subject }, 'site CA created');
    await Promise.all(
      s.stale.map(async (x) => {
        const pair = x.want.given ?? issueServing(x.want.names, ca!, now);
        await writeSecret(kube, tlsSecret(x.want.name, pair), x.exists);
        ctx.log.info(
          {
            secret: `${CONFIG_NAMESPACE}/${x.want.name}`,
            names: x.want.names,
            serial: new X509Certificate(pair.certPem).serialNumber,
          },
          `secret ${x.want.name} written`,
        );
      }),
    );
    // before the ingress config moves: the routes step must still find routes under the old domain
    const previous = s.ingress.spec?.appsDomain;
    if (previous && previous !== s.domains.apps) await rememberAppsDomain(ctx.fs, ctx.stateDir, previous);
    await kube.update<IngressConfig>(INGRESS_CONFIG, (current) => {
      const spec = mergeIngress(current.spec ?? {}, s.domains);
      return isDeepStrictEqual(spec, current.spec) ? undefined : { ...current, spec };
    });
    await kube.update<APIServerConfig>(APISERVER_CONFIG, (current) => {
      const named = current.spec?.servingCerts?.namedCertificates ?? [];
      const merged = mergeNamedCertificates(named, s.domains);
      if (isDeepStrictEqual(named, merged)) return undefined;
      return {
        ...current,
        spec: { ...current.spec, servingCerts: { ...current.spec?.servingCerts, namedCertificates: merged } },
      };
    });
  },

  async verify(ctx) {
    const plan = planOf(ctx, await survey(ctx, await ctx.kube()));
    if (plan.action === 'noop') return;
    const left = plan.action === 'change' ? plan.changes.map((c) => `${c.action} ${c.target}`).join('; ') : plan.reason;
    throw new VerificationError(`domain: the cluster still differs after apply: ${left}`, {
      step: 'domain',
      retryable: true,
    });
  },
};
