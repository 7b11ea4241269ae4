/**
 * The registry check against a real site registry (Debian's docker-registry with TLS from a site
 * CA and htpasswd) and a real API server: the release, a payload image in the node's image store,
 * a platform pod's, a catalog's by tag and a workload's, each asked where the site's mirrors send
 * it. Everything present lets the pull secret and mirrors through; a missing payload digest, a
 * digest that only a tag mirror covers, wrong credentials, an untrusted certificate or a mirror
 * that is down refuse the run (exit 3 through the command line) with nothing written.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RefusedError } from '../../src/base/errors.js';
import type { Site } from '../../src/config/site.js';
import { CLUSTER_VERSION } from '../../src/kube/cluster-motion.js';
import { MANAGED_SELECTOR } from '../../src/kube/openshift.js';
import type { Kube, KubeObject } from '../../src/ports/kube.js';
import { IMAGE_STORE } from '../../src/registry/needed.js';
import { REGISTRY_CHECK_FILE } from '../../src/steps/registry-check.js';
import { IDMS, ITMS } from '../../src/steps/mirrors.js';
import { agent, startFactory, STATE_DIR, storeSite, type ClusterEnv } from '../cluster/env.js';
import { missingBinaries } from '../kube/cluster.js';
import { runAgentAsync, writeSiteFolder } from '../node/cli.js';
import { Pusher } from './push.js';
import { missingRegistryTools, startSiteRegistry, type SiteRegistry } from './site-registry.js';

const skipped =
  process.env.SNO_RELOCATE_SKIP_KUBE === '1' || missingBinaries().length > 0 || missingRegistryTools().length > 0;

const RELEASE = 'quay.io/openshift-release-dev/ocp-release';
const ART = 'quay.io/openshift-release-dev/ocp-v4.0-art-dev';
const CATALOG = 'registry.redhat.io/redhat/redhat-operator-index:v4.16';
const SHOP = 'registry.store42.invalid/shop/web';
const ABSENT = `sha256:${'0'.repeat(64)}`;
const STEPS = ['registry-check', 'cluster-pull-secret', 'mirrors'];

describe.skipIf(skipped)('registry check against a real site registry', () => {
  let env: ClusterEnv;
  let registry: SiteRegistry;
  let down: SiteRegistry;
  const digests = { release: '', stored: '', platform: '', shop: '' };
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let factoryPullSecret: string | undefined;
  let kube: Kube;

  /** a root whose node image store holds the payload image the node pulled at the factory */
  const nodeRoot = () => {
    const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-registry-root-'));
    mkdirSync(path.dirname(path.join(root, IMAGE_STORE)), { recursive: true });
    writeFileSync(
      path.join(root, IMAGE_STORE),
      JSON.stringify([{ id: 'a'.repeat(64), names: [`${ART}@${digests.stored}`], digest: digests.stored }]),
    );
    return root;
  };

  /** what ClusterVersion wants: the release image the payload comes from */
  const setRelease = (image: string) =>
    kube.updateStatus<KubeObject & { status?: Record<string, unknown> }>(CLUSTER_VERSION, (cv) => ({
      ...cv,
      status: { ...cv.status, desired: { version: '4.16.9', image } },
    }));

  /** the site: the registry's credentials, its CA as the trust bundle, digest and tag mirrors */
  const site = (parts: Partial<Site> = {}): Site =>
    storeSite({
      registryCheck: undefined,
      pullSecret: { auths: { [registry.host]: { auth: registry.auth } } },
      trustBundle: { caBundlePem: registry.caPem, proxyTrustedCA: false },
      imageDigestMirrors: [
        { source: RELEASE, mirrors: [`${registry.host}/ocp/release`], mirrorSourcePolicy: 'NeverContactSource' },
        { source: ART, mirrors: [`${registry.host}/ocp/release`], mirrorSourcePolicy: 'NeverContactSource' },
        {
          source: 'registry.store42.invalid/shop',
          mirrors: [`${registry.host}/shop`],
          mirrorSourcePolicy: 'NeverContactSource',
        },
      ],
      imageTagMirrors: [
        {
          source: 'registry.redhat.io/redhat',
          mirrors: [`${registry.host}/redhat`],
          mirrorSourcePolicy: 'NeverContactSource',
        },
      ],
      ...parts,
    });

  const pullSecret = async () =>
    (await core.readNamespacedSecret({ namespace: 'openshift-config', name: 'pull-secret' }).catch(() => undefined))
      ?.data?.['.dockerconfigjson'];
  const agentMirrors = async () =>
    (
      await Promise.all(
        [IDMS, ITMS].map((k) =>
          custom.listClusterCustomObject({
            group: 'config.openshift.io',
            version: 'v1',
            plural: k.kind === 'ImageDigestMirrorSet' ? 'imagedigestmirrorsets' : 'imagetagmirrorsets',
            labelSelector: MANAGED_SELECTOR,
          }),
        ),
      )
    ).flatMap((l) => (l as { items: unknown[] }).items);

  /** runs the three steps on the site; the refusal, or the registry check's recorded result */
  const relocate = async (s: Site, consoleLines: string[] = []) => {
    const a = await agent(env, s, nodeRoot());
    a.ctx.console = async (line) => void consoleLines.push(line);
    try {
      const state = await a.run(STEPS);
      return { root: a.root, message: state.steps['registry-check']?.message ?? '' };
    } catch (err) {
      expect(err).toBeInstanceOf(RefusedError);
      return { root: a.root, refused: (err as Error).message };
    }
  };

  const expectNothingWritten = async () => {
    expect(await pullSecret()).toBe(factoryPullSecret);
    expect(await agentMirrors()).toEqual([]);
  };

  beforeAll(async () => {
    [env, registry, down] = await Promise.all([
      startFactory({ models: false, seed: { csrs: false } }),
      startSiteRegistry(),
      startSiteRegistry(),
    ]);
    kube = (await agent(env, site())).kube;
    const kc = env.cluster.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    const pusher = new Pusher(registry);
    try {
      digests.release = await pusher.image('ocp/release', 'release 4.16.9');
      digests.stored = await pusher.image('ocp/release', 'machine-config-operator');
      digests.platform = await pusher.image('ocp/release', 'etcd');
      digests.shop = await pusher.image('shop/web', 'shop front');
      await pusher.image('redhat/redhat-operator-index', 'catalog v4.16', 'v4.16');
    } finally {
      pusher.close();
    }
    await down.stop();
    await setRelease(`${RELEASE}@${digests.release}`);
    await core.createNamespace({ body: { metadata: { name: 'openshift-etcd' } } });
    await core.createNamespace({ body: { metadata: { name: 'shop' } } });
    const pod = (namespace: string, name: string, image: string) =>
      core.createNamespacedPod({ namespace, body: { metadata: { name }, spec: { containers: [{ name, image }] } } });
    await pod('openshift-etcd', 'etcd-sno', `${ART}@${digests.platform}`);
    await pod('shop', 'web', `${SHOP}@${digests.shop}`);
    // an image of the cluster's own registry: not the site registries' business, so not counted
    await pod('shop', 'tool', 'image-registry.openshift-image-registry.svc:5000/shop/tool:1');
    await custom.createNamespacedCustomObject({
      group: 'operators.coreos.com',
      version: 'v1alpha1',
      plural: 'catalogsources',
      namespace: 'openshift-marketplace',
      body: {
        apiVersion: 'operators.coreos.com/v1alpha1',
        kind: 'CatalogSource',
        metadata: { name: 'redhat-operators', namespace: 'openshift-marketplace' },
        spec: { sourceType: 'grpc', image: CATALOG },
      },
    });
    factoryPullSecret = await pullSecret();
  }, 180_000);
  afterAll(async () => {
    await Promise.all([env?.stop(), registry?.stop()]);
  });
  afterEach(async () => {
    await setRelease(`${RELEASE}@${digests.release}`);
  });

  it('refuses a missing payload digest before any change, naming the image and the mirror asked', async () => {
    await setRelease(`${RELEASE}@${ABSENT}`);
    const { refused } = await relocate(site());
    expect(refused).toContain(
      `registry-check: 1 image the control plane or platform needs cannot be pulled through the site's registries: ${RELEASE}@${ABSENT} (payload; ClusterVersion version (desired release 4.16.9)): asked ${registry.host}/ocp/release@${ABSENT}: ${registry.host}: no manifest ocp/release@${ABSENT}`,
    );
    await expectNothingWritten();
  });

  it('refuses a digest that only a tag mirror covers: CRI-O never asks a tag-only mirror for a digest', async () => {
    const { refused } = await relocate(
      site({
        imageDigestMirrors: site().imageDigestMirrors.filter((m) => m.source !== RELEASE),
        imageTagMirrors: [
          ...site().imageTagMirrors,
          { source: RELEASE, mirrors: [`${registry.host}/ocp/release`], mirrorSourcePolicy: 'NeverContactSource' },
        ],
      }),
    );
    expect(refused).toContain(
      `${RELEASE}@${digests.release} (payload; ClusterVersion version (desired release 4.16.9)): asked (none): its source is blocked and no mirror serves this kind of pull`,
    );
    await expectNothingWritten();
  });

  it('refuses credentials the registry does not accept, at once', async () => {
    const wrong = Buffer.from('store42:not-the-password').toString('base64');
    const { refused } = await relocate(site({ pullSecret: { auths: { [registry.host]: { auth: wrong } } } }));
    expect(refused).toBe(
      `registry-check: the site's registry cannot be used: ${registry.host} (unauthorized): ${registry.host}: 401 for the registry API (/v2/): the site pull secret's credentials for it were refused`,
    );
    expect(refused).not.toContain(wrong);
    await expectNothingWritten();
  });

  it("refuses a registry whose certificate the site's trust bundle does not cover", async () => {
    const { refused } = await relocate(site({ trustBundle: undefined }));
    expect(refused).toMatch(
      new RegExp(
        `${registry.host} \\(untrusted\\): ${registry.host}: certificate not trusted \\(\\w+\\): add its CA to spec.trustBundle`,
      ),
    );
    await expectNothingWritten();
  });

  it('refuses a mirror that is down, at once', async () => {
    const first = site().imageDigestMirrors[0]!;
    const { refused } = await relocate(
      site({
        imageDigestMirrors: [
          { ...first, mirrors: [`${down.host}/ocp/release`, ...first.mirrors] },
          ...site().imageDigestMirrors.slice(1),
        ],
      }),
    );
    expect(refused).toBe(
      `registry-check: the site's registry cannot be used: ${down.host} (unreachable): ${down.host}: ECONNREFUSED`,
    );
    await expectNothingWritten();
  });

  it('refuses through the command line with exit 3, changing nothing', async () => {
    await setRelease(`${RELEASE}@${ABSENT}`);
    const s = site();
    const folder = writeSiteFolder(mkdtempSync(path.join(tmpdir(), 'sno-relocate-registry-site-')), 'store-0042', {
      baseDomain: s.baseDomain,
      hostname: s.hostname,
      network: { nmstate: { interfaces: [] }, internalIP: s.network.internalIP },
      pullSecret: s.pullSecret,
      trustBundle: { caBundle: registry.caPem },
      imageDigestMirrors: s.imageDigestMirrors,
      imageTagMirrors: s.imageTagMirrors,
    });
    const consoleFile = path.join(folder, 'console');
    const run = await runAgentAsync(
      [
        'run',
        folder,
        '--only',
        STEPS.join(','),
        '--root',
        nodeRoot(),
        '--kubeconfig',
        env.cluster.kubeconfigPath,
        '--console',
        consoleFile,
      ],
      {},
    );
    expect(run.code, run.stderr).toBe(3);
    // what the technician sees: the count as it goes, then why nothing changed
    const shown = readFileSync(consoleFile, 'utf8');
    expect(shown).toContain('sno-relocate: registry check: 5/5 images\n');
    expect(shown).toContain(`sno-relocate: REFUSED: registry-check: 1 image the control plane or platform needs`);
    expect(run.stderr).toContain(`${RELEASE}@${ABSENT}`);
    expect(run.stderr).toContain(`asked ${registry.host}/ocp/release@${ABSENT}`);
    expect(run.stderr).not.toContain(registry.auth);
    await expectNothingWritten();
  });

  it('lets the pull secret and mirrors through when every image is served, with progress and a result per image', async () => {
    const lines: string[] = [];
    const { root, message, refused } = await relocate(site(), lines);
    expect(refused).toBeUndefined();
    expect(message).toMatch(
      /^5 of 5 images served by the site's registries \(payload 2, platform 1, catalog 1, workload 1\) in \d+\.\d s$/,
    );
    expect(lines.at(-1)).toBe('registry check: 5/5 images');
    const report = JSON.parse(readFileSync(path.join(root, STATE_DIR, REGISTRY_CHECK_FILE), 'utf8')) as {
      results: { image: string; status: string; from: string }[];
    };
    expect(report.results.map((r) => [r.image, r.status, r.from]).sort()).toEqual(
      [
        [`${ART}@${digests.platform}`, 'present', `${registry.host}/ocp/release@${digests.platform}`],
        [`${ART}@${digests.stored}`, 'present', `${registry.host}/ocp/release@${digests.stored}`],
        [`${RELEASE}@${digests.release}`, 'present', `${registry.host}/ocp/release@${digests.release}`],
        [`${SHOP}@${digests.shop}`, 'present', `${registry.host}/shop/web@${digests.shop}`],
        [CATALOG, 'present', `${registry.host}/redhat/redhat-operator-index:v4.16`],
      ].sort(),
    );
    expect(JSON.parse(Buffer.from((await pullSecret())!, 'base64').toString())).toEqual({
      auths: { [registry.host]: { auth: registry.auth } },
    });
    expect(await agentMirrors()).toHaveLength(2);
  });

  it('goes on past a missing workload image, and says so in the result status shows', async () => {
    await core.createNamespacedPod({
      namespace: 'shop',
      body: { metadata: { name: 'cart' }, spec: { containers: [{ name: 'cart', image: `${SHOP}@${ABSENT}` }] } },
    });
    const { message, refused } = await relocate(site());
    expect(refused).toBeUndefined();
    expect(message).toContain('5 of 6 images served');
    expect(message).toContain(
      `warning: 1 workload image missing: ${SHOP}@${ABSENT} (workload; pod shop/cart): asked ${registry.host}/shop/web@${ABSENT}`,
    );
  });

  it('says in the plan what spec.registryCheck: skip leaves out', async () => {
    const a = await agent(env, site({ registryCheck: 'skip' }), nodeRoot());
    const [plan] = await a.plan(['registry-check']);
    expect(plan).toEqual({
      step: 'registry-check',
      action: 'noop',
      reason: expect.stringMatching(
        /^skipped \(spec\.registryCheck: skip\): \d+ images \(release payload, pods, catalogs\) not checked against the site's registries$/,
      ),
    });
  });
});
