/**
 * Installs the project's test CustomResourceDefinitions (test/kube/crds/*.yaml) into a test API and
 * waits until each is Established and served. A subset can be installed to model an older or a
 * smaller cluster: without IDMS/ITMS (before OpenShift 4.13), without OLM, without Cluster API.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ApiextensionsV1Api,
  ApiException,
  CustomObjectsApi,
  KubeConfig,
  loadYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';

export const CRD_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'crds');

export interface CrdInfo {
  /** plural.group, e.g. imagedigestmirrorsets.config.openshift.io */
  name: string;
  group: string;
  /** The storage version. */
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  file: string;
  /** Typed (camelCase fields such as xKubernetesPreserveUnknownFields), as the client's models are. */
  manifest: V1CustomResourceDefinition;
}

/** Names for groups of CRDs, usable in `only` / `except`. */
export const CRD_SETS: Record<string, readonly string[]> = {
  /** ImageDigestMirrorSet and ImageTagMirrorSet: served from OpenShift 4.13 on. */
  mirrorSets: ['imagedigestmirrorsets.config.openshift.io', 'imagetagmirrorsets.config.openshift.io'],
  olm: ['operators.coreos.com'],
  capi: ['cluster.x-k8s.io', 'clusterapis.operator.openshift.io'],
  layering: ['machineosconfigs.machineconfiguration.openshift.io', 'machineosbuilds.machineconfiguration.openshift.io'],
  hypershift: ['hypershift.openshift.io'],
};

/** Every test CRD, read from test/kube/crds (or another folder of them). */
export function listCrds(dir = CRD_DIR): CrdInfo[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => {
      const file = path.join(dir, f);
      // Typed, through the client's own deserializer: the typed API serializes by its model, and a
      // plain object's wire names (x-kubernetes-preserve-unknown-fields, ...) would be dropped.
      const manifest = loadYaml<V1CustomResourceDefinition>(readFileSync(file, 'utf8'));
      const spec = manifest.spec;
      const storage = spec.versions.find((v) => v.storage) ?? spec.versions[0]!;
      return {
        name: manifest.metadata!.name!,
        group: spec.group,
        version: storage.name,
        plural: spec.names.plural,
        kind: spec.names.kind,
        namespaced: spec.scope === 'Namespaced',
        file,
        manifest,
      };
    });
}

/**
 * True when `selector` names the CRD: its full name (plural.group), plural, kind (any case), group,
 * file name (with or without .yaml), or a set from CRD_SETS.
 */
function matches(crd: CrdInfo, selector: string): boolean {
  const set = CRD_SETS[selector];
  if (set) return set.some((s) => matches(crd, s));
  const s = selector.toLowerCase();
  const base = path.basename(crd.file).toLowerCase();
  return [crd.name, crd.plural, crd.kind.toLowerCase(), crd.group, base, base.replace(/\.yaml$/, '')].includes(s);
}

export interface ApplyCrdsOptions {
  /** Install only the CRDs these select (see matches()); default all. */
  only?: string[];
  /** Leave out the CRDs these select, e.g. ['mirrorSets'] for a cluster before OpenShift 4.13. */
  except?: string[];
  /** Bound for all to become Established and served; default 60 s. */
  timeoutMs?: number;
  /** the folder of CRDs to choose from; default test/kube/crds */
  dir?: string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Selects CRDs as applyCrds() would, without touching a cluster. Throws on a selector that selects nothing. */
export function selectCrds(opts: Pick<ApplyCrdsOptions, 'only' | 'except' | 'dir'> = {}): CrdInfo[] {
  const all = listCrds(opts.dir);
  for (const sel of [...(opts.only ?? []), ...(opts.except ?? [])]) {
    if (!all.some((c) => matches(c, sel))) throw new Error(`no test CRD matches "${sel}"`);
  }
  return all.filter(
    (c) => (!opts.only || opts.only.some((s) => matches(c, s))) && !(opts.except ?? []).some((s) => matches(c, s)),
  );
}

/**
 * Creates (or replaces) the selected CRDs, then waits until each is Established and a list of its
 * resource answers. Resolves with what was installed.
 */
export async function applyCrds(kubeconfigPath: string, opts: ApplyCrdsOptions = {}): Promise<CrdInfo[]> {
  const selected = selectCrds(opts);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);

  await Promise.all(
    selected.map(async (crd) => {
      try {
        await ext.createCustomResourceDefinition({ body: structuredClone(crd.manifest) });
      } catch (e) {
        if (!(e instanceof ApiException) || e.code !== 409)
          throw new Error(`creating CRD ${crd.name}: ${describeApiError(e)}`);
        const current = await ext.readCustomResourceDefinition({ name: crd.name });
        const body = structuredClone(crd.manifest);
        body.metadata = { ...body.metadata, resourceVersion: current.metadata?.resourceVersion };
        await ext.replaceCustomResourceDefinition({ name: crd.name, body });
      }
    }),
  );

  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  await Promise.all(
    selected.map(async (crd) => {
      let delay = 50;
      let last = '';
      for (;;) {
        try {
          const got = await ext.readCustomResourceDefinition({ name: crd.name });
          const conds = got.status?.conditions ?? [];
          const refused = conds.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
          if (refused) throw new Error(`CRD ${crd.name} names not accepted: ${refused.message}`);
          if (conds.some((c) => c.type === 'Established' && c.status === 'True')) {
            if (crd.namespaced)
              await custom.listCustomObjectForAllNamespaces({
                group: crd.group,
                version: crd.version,
                plural: crd.plural,
                limit: 1,
              });
            else
              await custom.listClusterCustomObject({
                group: crd.group,
                version: crd.version,
                plural: crd.plural,
                limit: 1,
              });
            return;
          }
          last = JSON.stringify(conds.map((c) => `${c.type}=${c.status}`));
        } catch (e) {
          if (e instanceof Error && e.message.includes('names not accepted')) throw e;
          last = describeApiError(e);
        }
        if (Date.now() > deadline) throw new Error(`CRD ${crd.name} not established in time (${last})`);
        await sleep(delay);
        delay = Math.min(500, delay * 2);
      }
    }),
  );
  return selected;
}

/** Deletes the selected CRDs (and so their objects), waiting until they are gone. */
export async function deleteCrds(kubeconfigPath: string, opts: ApplyCrdsOptions = {}): Promise<void> {
  const selected = selectCrds(opts);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  await Promise.all(
    selected.map(async (crd) => {
      try {
        await ext.deleteCustomResourceDefinition({ name: crd.name });
      } catch (e) {
        if (!(e instanceof ApiException) || e.code !== 404) throw e;
      }
      for (let delay = 50; ; delay = Math.min(500, delay * 2)) {
        try {
          await ext.readCustomResourceDefinition({ name: crd.name });
        } catch (e) {
          if (e instanceof ApiException && e.code === 404) return;
          throw e;
        }
        if (Date.now() > deadline) throw new Error(`CRD ${crd.name} not deleted in time`);
        await sleep(delay);
      }
    }),
  );
}

export function describeApiError(e: unknown): string {
  if (e instanceof ApiException) {
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body);
    return `HTTP ${e.code}: ${body.slice(0, 500)}`;
  }
  return e instanceof Error ? e.message : String(e);
}
