/**
 * Custom resource definitions that keep only an upstream kind's group, version, kind and scope,
 * with a schema that takes any field: for tests whose code reads the objects as they come, so the
 * upstream schema is not what is tested. Returns once discovery serves each kind.
 */
import { ApiextensionsV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { setTimeout as wait } from 'node:timers/promises';

export interface SchemalessKind {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  /** a status subresource, as the operator's own CRD has (status then changes only through it) */
  status?: boolean;
}

const SERVED_WITHIN_MS = 10_000;

export async function createSchemalessCrds(kc: KubeConfig, kinds: readonly SchemalessKind[]): Promise<void> {
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  for (const k of kinds)
    await ext.createCustomResourceDefinition({
      body: {
        metadata: { name: `${k.plural}.${k.group}` },
        spec: {
          group: k.group,
          scope: k.namespaced ? 'Namespaced' : 'Cluster',
          names: { kind: k.kind, plural: k.plural, singular: k.kind.toLowerCase(), listKind: `${k.kind}List` },
          versions: [
            {
              name: k.version,
              served: true,
              storage: true,
              ...(k.status && { subresources: { status: {} } }),
              schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
            },
          ],
        },
      },
    });
  const custom = kc.makeApiClient(CustomObjectsApi);
  const served = (k: SchemalessKind) =>
    custom
      .getAPIResources({ group: k.group, version: k.version })
      .then((r) => r.resources.some((x) => x.kind === k.kind))
      .catch(() => false);
  const deadline = Date.now() + SERVED_WITHIN_MS;
  for (const k of kinds)
    while (!(await served(k))) {
      if (Date.now() > deadline) throw new Error(`${k.kind} is not served ${SERVED_WITHIN_MS} ms after its CRD`);
      await wait(100);
    }
}
