/**
 * [access] Who can log in at the site, with no secret travelling back from the node:
 * - the site's admin client CA goes into a ConfigMap in openshift-config (key ca-bundle.crt) that
 *   `apiserver.config/cluster` names in spec.clientCA; the kube-apiserver operator merges it into
 *   the API server's --client-ca-file, so a kubeconfig whose certificate that CA signed with
 *   O=system:masters (`sno-relocate credentials`) is a cluster admin once the new revision is out;
 * - the kubeadmin bcrypt hash is written into the existing kube-system/kubeadmin secret's data in
 *   place: the OAuth server rejects a secret created more than an hour after kube-system (it reads
 *   that as deleted and recreated), so a missing secret is a conflict, never created.
 * The site CA for the API and apps certificates is the domain step's business.
 */
import { VerificationError } from '../base/errors.js';
import type { LegacySiteStep, StepContext } from '../config/site.js';
import type { Change, PlanResult } from '../engine/step.js';
import {
  APISERVER_CONFIG,
  CONFIG_NAMESPACE,
  managedLabels,
  SECRET_PREFIX,
  type APIServerConfig,
  type SecretObject,
} from '../kube/openshift.js';
import type { Kube, KubeObject, ObjectRef } from '../ports/kube.js';

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

interface Survey {
  changes: Change[];
  conflicts: string[];
  configMap?: 'create' | 'update';
  clientCaField: boolean;
  kubeadmin: boolean;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

async function survey(ctx: StepContext, kube: Kube): Promise<Survey> {
  const access = ctx.site.access ?? {};
  const s: Survey = { changes: [], conflicts: [], clientCaField: false, kubeadmin: false };
  if (access.clientCaPem !== undefined) {
    const cm = await kube.get<ConfigMapObject>(clientCaRef);
    if (cm?.data?.[CLIENT_CA_KEY] !== access.clientCaPem) {
      s.configMap = cm ? 'update' : 'create';
      s.changes.push({
        action: s.configMap,
        target: `ConfigMap ${CONFIG_NAMESPACE}/${CLIENT_CA_CONFIGMAP}`,
        summary: "the site's admin client CA (spec.access.clientCAFile)",
      });
    }
    const apiserver = await kube.get<APIServerConfig>(APISERVER_CONFIG);
    if (!apiserver)
      throw new VerificationError('apiserver.config.openshift.io/cluster does not exist', { step: 'access' });
    const current = (apiserver.spec?.clientCA as { name?: string } | undefined)?.name;
    if (current && current !== CLIENT_CA_CONFIGMAP)
      s.conflicts.push(
        `apiserver.config/cluster spec.clientCA names ConfigMap ${current}, which the agent did not make: replacing it would lock out whoever it admits`,
      );
    else if (current !== CLIENT_CA_CONFIGMAP) {
      s.clientCaField = true;
      s.changes.push({
        action: 'update',
        target: 'APIServer cluster',
        summary: 'spec.clientCA: the site admin client CA (rolls out a new kube-apiserver revision)',
        diff: [`+ spec.clientCA.name: ${CLIENT_CA_CONFIGMAP}`],
      });
    }
  }
  if (access.kubeadminPasswordHash !== undefined) {
    const secret = await kube.get<SecretObject>(KUBEADMIN_SECRET);
    if (!secret)
      s.conflicts.push(
        'kube-system/kubeadmin does not exist: the OAuth server accepts only the one made at installation, so it cannot be created again',
      );
    else if (secret.data?.kubeadmin !== b64(access.kubeadminPasswordHash)) {
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

export const accessStep: LegacySiteStep = {
  name: 'access',
  group: 'cluster',
  description: "the site's admin client CA in `apiserver.config` spec.clientCA; the kubeadmin hash updated in place",
  inputs: (site) => ({
    clientCa: site.access?.clientCaPem ?? null,
    kubeadmin: site.access?.kubeadminPasswordHash ?? null,
  }),

  async plan(ctx): Promise<PlanResult> {
    const access = ctx.site.access;
    if (access?.clientCaPem === undefined && access?.kubeadminPasswordHash === undefined)
      return {
        action: 'noop',
        reason: "the site-config gives no admin client CA and no kubeadmin hash: the factory's access stays",
      };
    const s = await survey(ctx, await ctx.kube());
    if (s.conflicts.length > 0) return { action: 'conflict', reason: s.conflicts.join('; ') };
    if (s.changes.length === 0) return { action: 'noop', reason: "the site's access is in place" };
    return { action: 'change', summary: "give the site's administrators access", changes: s.changes };
  },

  async apply(ctx) {
    const kube = await ctx.kube();
    const access = ctx.site.access!;
    const s = await survey(ctx, kube);
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

  async verify(ctx) {
    const s = await survey(ctx, await ctx.kube());
    if (s.conflicts.length > 0 || s.changes.length > 0)
      throw new VerificationError(
        `access: still to do: ${[...s.conflicts, ...s.changes.map((c) => c.target)].join('; ')}`,
        { step: 'access' },
      );
  },
};
