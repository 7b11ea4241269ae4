/**
 * [access] Who can log in at the site, with no secret travelling back from the node:
 * - the site's admin client CA goes into a ConfigMap in openshift-config (key ca-bundle.crt) that
 *   `apiserver.config/cluster` names in spec.clientCA; the kube-apiserver operator merges it into
 *   the API server's --client-ca-file, a file the running API server reloads (client-ca is one of the
 *   operator's CertConfigMaps, not a revisioned input: starter.go:632-634 in release-4.18), so a
 *   kubeconfig whose certificate that CA signed with O=system:masters (`sno-relocate credentials`)
 *   is a cluster admin once the file is synced, with no API outage;
 * - the kubeadmin bcrypt hash is written into the existing kube-system/kubeadmin secret's data in
 *   place: the OAuth server rejects a secret created more than an hour after kube-system (it reads
 *   that as deleted and recreated), so a missing secret is a conflict, never created.
 * The site CA for the API and apps certificates is the domain step's business.
 */
import type { Site, Step } from '../config/site.js';
import type { Change, PlanResult } from '../engine/step.js';
import {
  APISERVER_CONFIG,
  CONFIG_NAMESPACE,
  managedLabels,
  SECRET_PREFIX,
  type APIServerConfig,
  type SecretObject,
} from '../kube/openshift.js';
import type { KubeObject, ObjectRef } from '../ports/kube.js';

export const CLIENT_CA_CONFIGMAP = `${SECRET_PREFIX}admin-client-ca`;
export const CLIENT_CA_KEY = 'ca-bundle.crt';
export const KUBEADMIN_SECRET: ObjectRef = {
  apiVersion: 'v1',
  kind: 'Secret',
  namespace: 'kube-system',
  name: 'kubeadmin',
};

const clientCaRef: ObjectRef = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace: CONFIG_NAMESPACE,
  name: CLIENT_CA_CONFIGMAP,
};

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}

/** What the step reads: the client CA ConfigMap, the API server config and the kubeadmin secret. */
export interface AccessView {
  clientCa?: ConfigMapObject;
  apiserver?: APIServerConfig;
  kubeadmin?: SecretObject;
}

interface Decision {
  changes: Change[];
  conflicts: string[];
  configMap?: 'create' | 'update';
  clientCaField: boolean;
  kubeadmin: boolean;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

function decide(view: AccessView, access: NonNullable<Site['access']>): Decision {
  const s: Decision = { changes: [], conflicts: [], clientCaField: false, kubeadmin: false };
  if (access.clientCaPem !== undefined) {
    if (view.clientCa?.data?.[CLIENT_CA_KEY] !== access.clientCaPem) {
      s.configMap = view.clientCa ? 'update' : 'create';
      s.changes.push({
        action: s.configMap,
        target: `ConfigMap ${CONFIG_NAMESPACE}/${CLIENT_CA_CONFIGMAP}`,
        summary: "the site's admin client CA (spec.access.clientCAFile)",
      });
    }
    const current = (view.apiserver?.spec?.clientCA as { name?: string } | undefined)?.name;
    if (!view.apiserver) s.conflicts.push('apiserver.config.openshift.io/cluster does not exist');
    else if (current && current !== CLIENT_CA_CONFIGMAP)
      s.conflicts.push(
        `apiserver.config/cluster spec.clientCA names ConfigMap ${current}, which the agent did not make: replacing it would lock out whoever it admits`,
      );
    else if (current !== CLIENT_CA_CONFIGMAP) {
      s.clientCaField = true;
      s.changes.push({
        action: 'update',
        target: 'APIServer cluster',
        summary:
          'spec.clientCA: the site admin client CA, added to the API server’s client CAs with no restart (a hot-reloaded file, not a revision)',
        diff: [`+ spec.clientCA.name: ${CLIENT_CA_CONFIGMAP}`],
      });
    }
  }
  if (access.kubeadminPasswordHash !== undefined) {
    if (!view.kubeadmin)
      s.conflicts.push(
        'kube-system/kubeadmin does not exist: the OAuth server accepts only the one made at installation, so it cannot be created again',
      );
    else if (view.kubeadmin.data?.kubeadmin !== b64(access.kubeadminPasswordHash)) {
      s.kubeadmin = true;
      s.changes.push({
        action: 'update',
        target: 'Secret kube-system/kubeadmin',
        summary: "the site's kubeadmin password hash, written in place",
      });
    }
  }
  return s;
}

const givesAccess = (site: Site) =>
  site.access?.clientCaPem !== undefined || site.access?.kubeadminPasswordHash !== undefined;

export const accessStep: Step<AccessView> = {
  name: 'access',
  group: 'cluster',
  description: "the site's admin client CA in `apiserver.config` spec.clientCA; the kubeadmin hash updated in place",
  inputs: (site) => ({
    clientCa: site.access?.clientCaPem ?? null,
    kubeadmin: site.access?.kubeadminPasswordHash ?? null,
  }),

  async survey(ctx) {
    // the factory's access stays without asking the API when the site-config gives none
    if (!givesAccess(ctx.site)) return {};
    const kube = await ctx.kube();
    const access = ctx.site.access!;
    const clientCa = access.clientCaPem === undefined ? undefined : await kube.get<ConfigMapObject>(clientCaRef);
    const apiserver = access.clientCaPem === undefined ? undefined : await kube.get<APIServerConfig>(APISERVER_CONFIG);
    const kubeadmin =
      access.kubeadminPasswordHash === undefined ? undefined : await kube.get<SecretObject>(KUBEADMIN_SECRET);
    return { ...(clientCa && { clientCa }), ...(apiserver && { apiserver }), ...(kubeadmin && { kubeadmin }) };
  },

  plan(view, site): PlanResult {
    if (!givesAccess(site))
      return {
        action: 'noop',
        reason: "the site-config gives no admin client CA and no kubeadmin hash: the factory's access stays",
      };
    const s = decide(view, site.access!);
    if (s.conflicts.length > 0) return { action: 'conflict', reason: s.conflicts.join('; ') };
    if (s.changes.length === 0) return { action: 'noop', reason: "the site's access is in place" };
    return { action: 'change', summary: "give the site's administrators access", changes: s.changes };
  },

  async apply(ctx, view) {
    const kube = await ctx.kube();
    const access = ctx.site.access!;
    const s = decide(view, access);
    // the ConfigMap before the field naming it: the operator never sees a clientCA it cannot read
    if (s.configMap === 'create')
      await kube.create<ConfigMapObject>({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: CLIENT_CA_CONFIGMAP, namespace: CONFIG_NAMESPACE, labels: { ...managedLabels } },
        data: { [CLIENT_CA_KEY]: access.clientCaPem! },
      });
    else if (s.configMap === 'update')
      await kube.update<ConfigMapObject>(clientCaRef, (cm) => ({
        ...cm,
        data: { ...cm.data, [CLIENT_CA_KEY]: access.clientCaPem! },
      }));
    if (s.clientCaField) await kube.mergePatch(APISERVER_CONFIG, { spec: { clientCA: { name: CLIENT_CA_CONFIGMAP } } });
    if (s.kubeadmin)
      // an update of the data only: the secret keeps its uid and creationTimestamp
      await kube.update<SecretObject>(KUBEADMIN_SECRET, (secret) => ({
        ...secret,
        data: { ...secret.data, kubeadmin: b64(access.kubeadminPasswordHash!) },
      }));
    ctx.log.info(
      { clientCA: access.clientCaPem !== undefined, kubeadmin: access.kubeadminPasswordHash !== undefined },
      "the site's access is in place",
    );
  },
};
