/**
 * The shared test API servers (test/kube/pool.ts) keep files apart: what one file wrote, changed,
 * installed or rolled out is gone when the next file gets the server.
 *
 * The test is both files in turn: it takes its worker's server as a file does, writes one object of
 * every kind the suite uses, changes seeded objects, adds a CRD of its own, changes a test CRD,
 * rolls out a flag and stops kube-apiserver, then hands the server back and takes it again, as the
 * next file would, asking for two test CRDs only. Every check reads the objects by name through the
 * typed API, not through the reset's own listing.
 */
import { readFileSync } from 'node:fs';
import {
  ApiextensionsV1Api,
  ApiException,
  CertificatesV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  RbacAuthorizationV1Api,
  type KubernetesObject,
  type V1JSONSchemaProps,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { startCluster, type TestCluster } from './cluster.js';
import { seedFactoryCluster } from './factory-cluster.js';
import { listCrds } from './install.js';
import { POOL_ENV } from './pool.js';

const status = (p: Promise<unknown>): Promise<number> =>
  p.then(
    () => 200,
    (e: unknown) => (e instanceof ApiException ? e.code : 0),
  );

/** kube-apiserver's command line, from its process */
const flags = (c: TestCluster): string[] =>
  readFileSync(`/proc/${c.pids().apiServer}/cmdline`, 'utf8').split('\0').filter(Boolean);

/** The smallest value a schema accepts: its required fields, each at its type's simplest. */
function minimal(schema: V1JSONSchemaProps): unknown {
  if (schema._enum?.length) return schema._enum[0];
  switch (schema.type) {
    case 'object':
      return Object.fromEntries(
        (schema.required ?? []).filter((f) => f !== 'metadata').map((f) => [f, minimal(schema.properties?.[f] ?? {})]),
      );
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => minimal(schema.items as V1JSONSchemaProps));
    case 'integer':
    case 'number':
      return schema.minimum ?? 0;
    case 'boolean':
      return false;
    default:
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
  }
}

const WIDGETS = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

describe.skipIf(!process.env[POOL_ENV])('the shared test API, handed from one file to the next', () => {
  it('holds nothing of the last file: objects, namespaces, CRDs, changed seeds, flags, a stopped server', async () => {
    // the first file: every test CRD, the factory's objects, and one object of each other kind
    const first = await startCluster({ crds: {} });
    const kc = first.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const objects = KubernetesObjectApi.makeApiClient(kc);
    await seedFactoryCluster(first.kubeconfigPath);
    const ns = 'file-one';
    const written: (KubernetesObject & Record<string, unknown>)[] = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: ns } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: ns, finalizers: ['example.com/hold'] } },
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa', namespace: ns } },
      { apiVersion: 'v1', kind: 'Node', metadata: { name: 'file-one-node' } },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p', namespace: ns },
        spec: {
          nodeName: 'file-one-node',
          containers: [{ name: 'c', image: 'example.com/c@sha256:' + 'a'.repeat(64) }],
        },
      },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'svc', namespace: ns }, spec: { ports: [{ port: 80 }] } },
      {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: 'ev', namespace: 'default' },
        involvedObject: { kind: 'Node', name: 'file-one-node' },
      },
      { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l', namespace: 'kube-system' } },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'file-one' }, rules: [] },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'file-one' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'file-one' },
        subjects: [{ kind: 'User', name: 'someone', apiGroup: 'rbac.authorization.k8s.io' }],
      },
      {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: 'v1.gone.example.com' },
        spec: {
          group: 'gone.example.com',
          version: 'v1',
          service: { namespace: ns, name: 'svc' },
          insecureSkipTLSVerify: true,
          groupPriorityMinimum: 1000,
          versionPriority: 15,
        },
      },
      WIDGETS,
    ];
    for (const o of written) await objects.create(o);
    // one object of each test CRD's kind that the seed did not write
    for (const crd of listCrds()) {
      const gvr = { group: crd.group, version: crd.version, plural: crd.plural };
      const schema = crd.manifest.spec.versions.find((v) => v.name === crd.version)!.schema!.openAPIV3Schema!;
      const body = {
        ...(minimal(schema) as object),
        apiVersion: `${crd.group}/${crd.version}`,
        kind: crd.kind,
        // singletons (`cluster`) take the one name their schema allows; the seed may have made it
        metadata: { name: (schema.properties?.metadata?.properties?.name?._enum?.[0] as string) ?? 'file-one' },
      };
      const made = crd.namespaced
        ? custom.createNamespacedCustomObject({ ...gvr, namespace: ns, body })
        : custom.createClusterCustomObject({ ...gvr, body });
      expect([200, 409]).toContain(await status(made));
      const listed = (await custom.listCustomObjectForAllNamespaces(gvr)) as { items: unknown[] };
      expect(listed.items.length, crd.name).toBeGreaterThan(0);
    }
    const csrs = (await kc.makeApiClient(CertificatesV1Api).listCertificateSigningRequest()).items;
    expect(csrs.length).toBeGreaterThan(0);
    // seeded objects changed and removed
    await core.patchNamespace({
      name: 'default',
      body: [{ op: 'add', path: '/metadata/labels', value: { 'file-one': 'was-here' } }],
    });
    await rbac.deleteClusterRoleBinding({ name: 'system:discovery' });
    // a test CRD changed in place: the next file must get it as the manifest says
    const idms = 'imagedigestmirrorsets.config.openshift.io';
    const idmsUid = (await ext.readCustomResourceDefinition({ name: idms })).metadata!.uid;
    const itms = 'imagetagmirrorsets.config.openshift.io';
    const itmsUid = (await ext.readCustomResourceDefinition({ name: itms })).metadata!.uid;
    await ext.patchCustomResourceDefinition({
      name: idms,
      body: [{ op: 'add', path: '/spec/names/shortNames', value: ['fileone'] }],
    });
    // a flag rolled out, then kube-apiserver left stopped
    await first.restartApiServer({ extraArgs: ['--max-requests-inflight=401'] });
    expect(flags(first)).toContain('--max-requests-inflight=401');
    const server = first.server;
    await first.stopApiServer();
    await first.stop();

    // the next file
    const next = await startCluster({ crds: { only: ['mirrorSets'] } });
    try {
      expect(next.server).toBe(server);
      expect(flags(next)).not.toContain('--max-requests-inflight=401');
      const kc2 = next.kubeConfig();
      const read = KubernetesObjectApi.makeApiClient(kc2);
      for (const o of written) expect(`${o.kind} ${await status(read.read(o as never))}`).toBe(`${o.kind} 404`);
      expect((await kc2.makeApiClient(CertificatesV1Api).listCertificateSigningRequest()).items).toEqual([]);
      const core2 = kc2.makeApiClient(CoreV1Api);
      expect((await core2.listNode()).items).toEqual([]);
      expect((await core2.listNamespace()).items.map((n) => n.metadata!.name).sort()).toEqual([
        'default',
        'kube-node-lease',
        'kube-public',
        'kube-system',
      ]);
      expect((await core2.readNamespace({ name: 'default' })).metadata!.labels?.['file-one']).toBeUndefined();
      expect(
        await status(kc2.makeApiClient(RbacAuthorizationV1Api).readClusterRoleBinding({ name: 'system:discovery' })),
      ).toBe(200);
      expect(
        (await kc2.makeApiClient(CoordinationV1Api).listNamespacedLease({ namespace: 'kube-system' })).items,
      ).toEqual([]);

      // the CRDs asked for, and only those: the unchanged one kept, the changed one installed anew
      const ext2 = kc2.makeApiClient(ApiextensionsV1Api);
      const crds = (await ext2.listCustomResourceDefinition()).items;
      expect(crds.map((c) => c.metadata!.name).sort()).toEqual([idms, itms]);
      expect(crds.find((c) => c.metadata!.name === itms)!.metadata!.uid).toBe(itmsUid);
      const idms2 = crds.find((c) => c.metadata!.name === idms)!;
      expect(idms2.metadata!.uid).not.toBe(idmsUid);
      expect(idms2.spec.names.shortNames).toEqual(
        listCrds().find((c) => c.name === idms)!.manifest.spec.names.shortNames,
      );
      const custom2 = kc2.makeApiClient(CustomObjectsApi);
      for (const plural of ['imagedigestmirrorsets', 'imagetagmirrorsets'])
        expect(
          (
            (await custom2.listClusterCustomObject({ group: 'config.openshift.io', version: 'v1', plural })) as {
              items: unknown[];
            }
          ).items,
        ).toEqual([]);
    } finally {
      await next.stop();
    }
  }, 300_000);
});
