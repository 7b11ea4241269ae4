/**
 * [access] Who can log in at the site, with no secret travelling back from the node:
 * - the site's admin client CA goes into a ConfigMap in openshift-config (key ca-bundle.crt) that
 *   `apiserver.config/cluster` names in spec.clientCA; the kube-apiserver operator copies it to
 *   user-client-ca and folds it into client-ca beside the installer's admin-kubeconfig-client-ca
 *   (cluster-kube-apiserver-operator targetconfigcontroller.go ManageClientCABundle, release-4.14 to
 *   4.18), which the API server reloads without a new revision (client-ca is a CertConfigMap, starter.go):
 *   a kubeconfig whose certificate that CA signed with O=system:masters (`sno-relocate credentials`)
 *   is a cluster admin once the operator has synced;
 * - the installer's admin CA (openshift-config/admin-kubeconfig-client-ca) is emptied when the site
 *   revokes the factory's admin.kubeconfig: the operator skips an empty bundle, so the API server
 *   refuses that kubeconfig while the site's stays admitted. The bundle is kept in an annotation,
 *   and only `factoryAdminKubeconfig: keep`, said in so many words, puts it back: a site-config
 *   that says nothing (or gives no client CA) leaves a revoked CA revoked. Plan and status say
 *   whether it still works;
 * - the kubeadmin bcrypt hash is written into the existing kube-system/kubeadmin secret's data in
 *   place: the OAuth server rejects a secret created more than an hour after kube-system (it reads
 *   that as deleted and recreated), so a missing secret is a conflict, never created.
 * The site CA for the API and apps certificates is the domain step's business.
 */
import type { Site } from '../config/site.js';
import type { Step } from './step.js';
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
import { certificatesIn } from '../base/pem.js';

export const CLIENT_CA_CONFIGMAP = `${SECRET_PREFIX}admin-client-ca`;
export const CLIENT_CA_KEY = 'ca-bundle.crt';
export const KUBEADMIN_SECRET: ObjectRef = {
  apiVersion: 'v1',
  kind: 'Secret',
  namespace: 'kube-system',
  name: 'kubeadmin',
};

/** the installer's admin CA, which signs the factory's admin.kubeconfig */
export const ADMIN_CA_CONFIGMAP = 'admin-kubeconfig-client-ca';
/** where the revoked admin CA bundle is kept, so `keep` can restore it */
export const REVOKED_ANNOTATION = 'sno-relocate.openshift.io/revoked-ca-bundle';
/** how the plan and the run's record say it */
export const FACTORY_ADMIN_WORKS = "the factory's admin.kubeconfig is still a cluster admin at this site";
export const FACTORY_ADMIN_REFUSED = "the factory's admin.kubeconfig is refused at this site";

const adminCaRef: ObjectRef = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace: CONFIG_NAMESPACE,
  name: ADMIN_CA_CONFIGMAP,
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

/** What the step reads: the site's and the installer's client CA ConfigMaps, the API server config, kubeadmin. */
export interface AccessView {
  clientCa?: ConfigMapObject;
  adminCa?: ConfigMapObject;
  apiserver?: APIServerConfig;
  kubeadmin?: SecretObject;
  /** when it was read: the operator drops expired CAs from the bundle */
  readAt: string;
}

/** What apply writes, in this order; a field left out is left alone. */
export interface AccessDecision {
  /** the site's admin client CA into its ConfigMap: created, or its key updated in place */
  clientCa?: { action: 'create' | 'update'; pem: string };
  /** apiserver.config spec.clientCA set to name that ConfigMap */
  clientCaField: boolean;
  /** the kubeadmin bcrypt hash, written into the existing secret's data in place */
  kubeadminHash?: string;
  /** the installer's admin CA bundle to write, and the one kept in the annotation when revoked */
  adminCa?: { bundle: string; revoked?: string };
  /** whether the factory's admin.kubeconfig works once the decision is applied */
  factoryWorks: boolean;
}

/** The decision, with the lines the plan shows for it and what refuses it. */
interface Judged {
  decision: AccessDecision;
  changes: Change[];
  conflicts: string[];
}

/** The fingerprints of the certificates the operator keeps from a bundle (CombineCABundleConfigMaps drops expired). */
function liveCas(pem: string, at: number): string[] {
  if (!pem.trim()) return [];
  try {
    return certificatesIn(pem)
      .filter((c) => Date.parse(c.validTo) > at)
      .map((c) => c.fingerprint256);
  } catch {
    // the operator refuses a malformed bundle and keeps the client CAs it had: say nothing of it here
    return [];
  }
}

/** The installer's admin CA: revoked (emptied, kept in an annotation) or restored, and whether it then admits. */
function decideAdminCa(view: AccessView, access: NonNullable<Site['access']>, s: Judged): void {
  const at = Date.parse(view.readAt);
  const bundle = view.adminCa?.data?.[CLIENT_CA_KEY] ?? '';
  const revoked = view.adminCa?.metadata.annotations?.[REVOKED_ANNOTATION];
  const target = `ConfigMap ${CONFIG_NAMESPACE}/${ADMIN_CA_CONFIGMAP}`;
  let after = bundle;
  if (access.factoryAdminKubeconfig === 'revoke' && liveCas(bundle, at).length > 0) {
    after = '';
    s.decision.adminCa = { bundle: '', revoked: bundle };
    s.changes.push({
      action: 'update',
      target,
      summary: "revoke the factory's admin.kubeconfig: the installer's admin CA leaves the API server's client CAs",
    });
  } else if (access.factoryAdminKubeconfig === 'keep' && revoked && !bundle) {
    // put back only on the site-config's word: a site-config that says nothing leaves it revoked
    after = revoked;
    s.decision.adminCa = { bundle: revoked };
    s.changes.push({
      action: 'update',
      target,
      summary: "restore the installer's admin CA: the factory's admin.kubeconfig is a cluster admin again",
    });
  }
  // the site's own client CA may be the installer's: then the factory's kubeconfig still works
  const site = new Set(access.clientCaPem === undefined ? [] : liveCas(access.clientCaPem, at));
  const factory = liveCas(after || bundle, at);
  s.decision.factoryWorks = liveCas(after, at).length > 0 || factory.some((f) => site.has(f));
}

/** The plan's last words on the factory's kubeconfig: every plan of the step says it. */
const factorySays = (s: Pick<AccessDecision, 'factoryWorks'>) =>
  s.factoryWorks ? FACTORY_ADMIN_WORKS : FACTORY_ADMIN_REFUSED;

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

function decide(view: AccessView, access: NonNullable<Site['access']>): Judged {
  const s: Judged = { decision: { clientCaField: false, factoryWorks: true }, changes: [], conflicts: [] };
  if (access.clientCaPem !== undefined) {
    if (view.clientCa?.data?.[CLIENT_CA_KEY] !== access.clientCaPem) {
      const action = view.clientCa ? 'update' : 'create';
      s.decision.clientCa = { action, pem: access.clientCaPem };
      s.changes.push({
        action,
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
      s.decision.clientCaField = true;
      s.changes.push({
        action: 'update',
        target: 'APIServer cluster',
        summary:
          "spec.clientCA: the site admin client CA (added to the API server's client CAs without a new revision)",
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
      s.decision.kubeadminHash = access.kubeadminPasswordHash;
      s.changes.push({
        action: 'update',
        target: 'Secret kube-system/kubeadmin',
        summary: "the site's kubeadmin password hash, written in place",
      });
    }
  }
  decideAdminCa(view, access, s);
  return s;
}

const givesAccess = (site: Site) =>
  site.access?.clientCaPem !== undefined || site.access?.kubeadminPasswordHash !== undefined;

export const accessStep: Step<AccessView, AccessDecision> = {
  name: 'access',
  group: 'cluster',
  description: "the site's admin client CA in `apiserver.config` spec.clientCA; the kubeadmin hash updated in place",
  inputs: (site) => ({
    clientCa: site.access?.clientCaPem ?? null,
    kubeadmin: site.access?.kubeadminPasswordHash ?? null,
    factoryAdminKubeconfig: site.access?.factoryAdminKubeconfig ?? null,
  }),

  async survey(ctx) {
    const kube = await ctx.kube();
    const access = ctx.site.access ?? {};
    // read every time: the plan says whether the factory's admin.kubeconfig still works
    const adminCa = await kube.get<ConfigMapObject>(adminCaRef);
    const clientCa = access.clientCaPem === undefined ? undefined : await kube.get<ConfigMapObject>(clientCaRef);
    const apiserver = access.clientCaPem === undefined ? undefined : await kube.get<APIServerConfig>(APISERVER_CONFIG);
    const kubeadmin =
      access.kubeadminPasswordHash === undefined ? undefined : await kube.get<SecretObject>(KUBEADMIN_SECRET);
    return {
      ...(clientCa && { clientCa }),
      ...(adminCa && { adminCa }),
      ...(apiserver && { apiserver }),
      ...(kubeadmin && { kubeadmin }),
      readAt: ctx.clock.now().toISOString(),
    };
  },

  plan(view, site): PlanResult<AccessDecision> {
    const { decision, changes, conflicts } = decide(view, site.access ?? {});
    if (!givesAccess(site) && changes.length === 0)
      return {
        action: 'noop',
        reason: `the site-config gives no admin client CA and no kubeadmin hash: the factory's access stays; ${factorySays(decision)}`,
      };
    if (conflicts.length > 0) return { action: 'conflict', reason: conflicts.join('; ') };
    if (changes.length === 0)
      return { action: 'noop', reason: `the site's access is in place; ${factorySays(decision)}` };
    return {
      action: 'change',
      summary: `give the site's administrators access; ${factorySays(decision)}`,
      changes,
      decision,
    };
  },

  async apply(ctx, decision) {
    const kube = await ctx.kube();
    const { clientCa, kubeadminHash, adminCa } = decision;
    // the ConfigMap before the field naming it: the operator never sees a clientCA it cannot read
    if (clientCa?.action === 'create')
      await kube.create<ConfigMapObject>({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: CLIENT_CA_CONFIGMAP, namespace: CONFIG_NAMESPACE, labels: { ...managedLabels } },
        data: { [CLIENT_CA_KEY]: clientCa.pem },
      });
    else if (clientCa?.action === 'update')
      // read-modify-write: the decision's key merged into the ConfigMap as it is now
      await kube.update<ConfigMapObject>(clientCaRef, (cm) => ({
        ...cm,
        data: { ...cm.data, [CLIENT_CA_KEY]: clientCa.pem },
      }));
    if (decision.clientCaField)
      await kube.mergePatch(APISERVER_CONFIG, { spec: { clientCA: { name: CLIENT_CA_CONFIGMAP } } });
    if (kubeadminHash !== undefined)
      // an update of the data only: the secret keeps its uid and creationTimestamp
      await kube.update<SecretObject>(KUBEADMIN_SECRET, (secret) => ({
        ...secret,
        data: { ...secret.data, kubeadmin: b64(kubeadminHash) },
      }));
    // last, once the site's own CA is named: the site is never without an administrator certificate
    if (adminCa) {
      const { bundle, revoked } = adminCa;
      await kube.update<ConfigMapObject>(adminCaRef, (cm) => {
        const annotations = Object.fromEntries(
          Object.entries(cm.metadata.annotations ?? {}).filter(([k]) => k !== REVOKED_ANNOTATION),
        );
        if (revoked !== undefined) annotations[REVOKED_ANNOTATION] = revoked;
        return { ...cm, metadata: { ...cm.metadata, annotations }, data: { ...cm.data, [CLIENT_CA_KEY]: bundle } };
      });
    }
    ctx.log.info(
      {
        clientCA: clientCa !== undefined || decision.clientCaField,
        kubeadmin: kubeadminHash !== undefined,
        factoryAdminKubeconfig: decision.factoryWorks ? 'works' : 'refused',
      },
      `the site's access is in place; ${factorySays(decision)}`,
    );
  },
};
