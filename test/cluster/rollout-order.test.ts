/**
 * The domain step's two writes that each make a kube-apiserver revision, in their order: first the
 * OAuth route on its new host (the OAuth metadata's new issuer), then the site's named certificate,
 * so that one installed revision holds both and the node restarts its API server once. Written the
 * other way round, the named certificate's revision carries the factory's issuer, is installed on
 * its own, and the issuer's revision restarts the API server again (docs/rollouts.md).
 *
 * What each revision holds is read from the kube-apiserver operator model's revisioned ConfigMaps
 * (config-N, oauth-metadata-N), so the check does not depend on the installer's pace: a revision that
 * serves the site's API name with the factory's issuer is the swap, on a loaded machine or an idle one.
 * The swapped agent is the real one with a test-only Kube port that writes the named certificate
 * just before ingress.config.
 */
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { APISERVER_CONFIG, INGRESS_CONFIG, type SiteDomains } from '../../src/kube/openshift.js';
import type { Kube, KubeObject } from '../../src/ports/kube.js';
import { mergeNamedCertificates } from '../../src/steps/domain/named-certificate.js';
import { relocateWholeSite, WHOLE_SITE_WRITES } from '../../bench/rollouts-relocation.js';
import { minimumRollouts } from '../../bench/rollouts-table.js';
import { ROLLOUT_KINDS, type RolloutKind } from '../../src/kube/rollout-costs.js';
import { agent, CLUSTER_PHASE, ROLLOUT_TIME_FACTOR, startFactory, storeSite, type ClusterEnv } from './env.js';
import { OPERAND_NAMESPACE } from './models/kube-apiserver-operator.js';
import { KUBE_APISERVERS } from './models/loop.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const SITE_API = 'api.sno.store42.example.com';
const SITE_ISSUER = 'https://oauth-openshift.apps.sno.store42.example.com';
/**
 * What the whole site's writes may cost at most: the domain's kube-apiserver restart and the proxy's,
 * the openshift-apiserver for the domain and for the proxy and trust bundle, the OAuth server for
 * the componentRoute's certificate, the new issuer and the proxy, the router once, one reboot
 * (docs/rollouts.md, The counts). Where the agent's next write lands while a rollout still runs, the
 * two share it: how many do depends on the pace, so each count lies between the table's minimum and this.
 */
const WHOLE_RELOCATION: Record<RolloutKind, number> = {
  'kube-apiserver': 2,
  'openshift-apiserver': 2,
  'oauth-server': 3,
  router: 1,
  reboot: 1,
};

type APIServer = KubeObject & {
  spec?: { servingCerts?: { namedCertificates?: Parameters<typeof mergeNamedCertificates>[0] } };
};

/** The Kube port with the named certificate written right before ingress.config, the writes swapped. */
function namedCertificateFirst(kube: Kube): Kube {
  let swapped = false;
  const domains: SiteDomains = { cluster: 'sno.store42.example.com', apps: '', api: SITE_API };
  return Object.assign(Object.create(kube) as Kube, {
    async update(...[ref, change]: Parameters<Kube['update']>) {
      if (!swapped && ref.apiVersion === INGRESS_CONFIG.apiVersion && ref.kind === INGRESS_CONFIG.kind) {
        swapped = true;
        await kube.update<APIServer>(APISERVER_CONFIG, (current) => {
          const named = mergeNamedCertificates(current.spec?.servingCerts?.namedCertificates ?? [], domains);
          return { ...current, spec: { ...current.spec, servingCerts: { namedCertificates: named } } };
        });
      }
      return kube.update(ref, change);
    },
  });
}

interface Revision {
  revision: number;
  names: string[];
  issuer: string;
}

/** The revisions made after `after`, each with the names it serves certificates for and its OAuth issuer. */
async function revisionsAfter(env: ClusterEnv, after: number): Promise<Revision[]> {
  const core = env.cluster.kubeConfig().makeApiClient(CoreV1Api);
  const maps = new Map(
    (await core.listNamespacedConfigMap({ namespace: OPERAND_NAMESPACE })).items.map((cm) => [
      cm.metadata!.name!,
      cm.data ?? {},
    ]),
  );
  const out: Revision[] = [];
  for (let n = after + 1; maps.has(`config-${n}`); n++) {
    const config = JSON.parse(maps.get(`config-${n}`)!['config.yaml']!) as {
      servingInfo: { namedCertificates: { names: string[] }[] };
    };
    const metadata = JSON.parse(maps.get(`oauth-metadata-${n}`)!.oauthMetadata!) as { issuer: string };
    out.push({
      revision: n,
      names: config.servingInfo.namedCertificates.flatMap((c) => c.names),
      issuer: metadata.issuer,
    });
  }
  return out;
}

/** Revisions that serve the site's API name under another issuer: each one an API restart of its own. */
const servedBeforeIssuer = (revisions: Revision[]) =>
  revisions.filter((r) => r.names.includes(SITE_API) && r.issuer !== SITE_ISSUER);

describe.skipIf(kubeSkipped)('the order of the writes that make kube-apiserver revisions', () => {
  let env: ClusterEnv | undefined;
  afterEach(async () => {
    await env?.stop();
    env = undefined;
  });

  /** the domain step on a fresh factory cluster, through `wrap`'s Kube port: the revisions it made */
  async function relocate(wrap: (kube: Kube) => Kube = (k) => k) {
    env = await startFactory();
    const a = await agent(env, storeSite(), undefined, undefined, { healthTimeoutSeconds: 120 });
    const kube = wrap(a.kube);
    a.ctx.kube = async () => kube;
    const from = env.models!.ledger.entries.length;
    const operator = (await env.cluster
      .kubeConfig()
      .makeApiClient(CustomObjectsApi)
      .getClusterCustomObject({ ...KUBE_APISERVERS, name: 'cluster' })) as {
      status?: { latestAvailableRevision?: number };
    };
    const revision = operator.status?.latestAvailableRevision ?? 1;
    expect((await a.run(['domain'])).result).toBe('succeeded');
    await env.models!.settled();
    return {
      revisions: await revisionsAfter(env, revision),
      ledger: env.models!.ledger.since(from),
    };
  }

  it('a whole relocation: the named certificate only with its issuer, and the rollouts it costs in all', async () => {
    let revisions: Revision[] = [];
    const run = await relocateWholeSite(ROLLOUT_TIME_FACTOR, CLUSTER_PHASE, async (e) => {
      revisions = await revisionsAfter(e, 1);
    });
    expect(
      revisions.some((r) => r.names.includes(SITE_API)),
      run.ledger,
    ).toBe(true);
    expect(servedBeforeIssuer(revisions), run.ledger).toEqual([]);
    const minimum = minimumRollouts(WHOLE_SITE_WRITES, ROLLOUT_KINDS);
    const within = Object.fromEntries(
      ROLLOUT_KINDS.map((k) => [k, run.counts[k] >= minimum[k] && run.counts[k] <= WHOLE_RELOCATION[k]]),
    );
    expect(within, `${JSON.stringify(run.counts)}: ${run.ledger}`).toEqual(
      Object.fromEntries(ROLLOUT_KINDS.map((k) => [k, true])),
    );
    const total = ROLLOUT_KINDS.reduce((sum, k) => sum + run.counts[k], 0);
    expect(total, run.ledger).toBeLessThanOrEqual(9);
  }, 300_000);

  it('an agent with the two writes swapped is caught every time', async () => {
    const { revisions, ledger } = await relocate(namedCertificateFirst);
    // installed before the issuer moves, it is an API restart of its own (usually: the installer's pace decides)
    expect(servedBeforeIssuer(revisions), ledger).toEqual([
      expect.objectContaining({ names: expect.arrayContaining([SITE_API]) as unknown }),
    ]);
  }, 300_000);
});
