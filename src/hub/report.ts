/**
 * The hub report: the agent's progress in the `status` of a small custom resource of its own
 * (SiteRelocation `sno-relocate`, cluster-scoped), created as soon as the cluster's API answers and
 * updated at every recorded change of the run. It lives in `status` because that is what a hub
 * reads: Open Cluster Management returns a managed object's fields through a ManifestWork's
 * statusFeedback JSONPaths under `.status`. It never holds a secret: step messages are already
 * scrubbed, and the site CA's certificate is public. From an image-based install's config media it
 * also carries the identity the hub knows the site by: the cluster ID as the cluster holds it (the
 * media's once the cluster-identity step set it), the infrastructure name the cluster kept, the
 * media's infra_id when it differs, and the media fields accepted but not used; never a key.
 */
import { AGENT_VERSION } from '../base/version.js';
import { caPaths } from '../certs/site-certs.js';
import { declinedSteps, type RunState } from '../engine/state.js';
import type { Logger } from '../log/logger.js';
import type { Clock } from '../ports/clock.js';
import type { RootFs } from '../ports/fs.js';
import type { Kube, KubeObject } from '../ports/kube.js';
import { established, waitForCrd } from '../kube/crd.js';
import { infraIdWarning, readClusterIdentity } from '../config/ibi/cluster-identity.js';
import type { ImageBasedSite } from '../config/ibi/image-based.js';
import { readWatchStatus } from '../watch/status-file.js';

export const REPORT_GROUP = 'sno-relocate.openshift.io';
export const REPORT_VERSION = 'v1alpha1';
export const REPORT_API_VERSION = `${REPORT_GROUP}/${REPORT_VERSION}`;
export const REPORT_KIND = 'SiteRelocation';
export const REPORT_PLURAL = 'siterelocations';
/** one per cluster: the name a hub's ManifestWork asks for */
export const REPORT_NAME = 'sno-relocate';
const CRD_NAME = `${REPORT_PLURAL}.${REPORT_GROUP}`;

export type Phase = 'Running' | 'Succeeded' | 'Failed' | 'Refused';

export interface ReportStatus {
  site: string;
  phase: Phase;
  currentStep?: string;
  message?: string;
  startedAt: string;
  finishedAt?: string;
  steps: {
    name: string;
    status: string;
    attempts: number;
    startedAt: string;
    finishedAt?: string;
    durationMs?: number;
    message?: string;
  }[];
  watcherErrorCount: number;
  siteCACertificate?: string;
  /** ClusterVersion spec.clusterID (image-based media only) */
  clusterID?: string;
  /** the cluster's infrastructure name, the factory's (image-based media only) */
  infraID?: string;
  /** the media's infra_id, when it differs from infraID: not applied */
  mediaInfraID?: string;
  /** the warnings of the run about the media, each naming both values */
  warnings?: string[];
  /** manifest.json fields accepted and not used */
  unusedFields?: string[];
  /**
   * `step: reason` for each change the run declined and went on without (a refused rename), joined
   * by `; `, empty when it declined nothing: a scalar, so a hub's statusFeedback always reads one
   */
  declined?: string;
  /** one condition, InService: whether the site is moved, and what it declined on the way */
  conditions?: InServiceCondition[];
  agentVersion: string;
  updatedAt: string;
}

export interface InServiceCondition {
  type: 'InService';
  status: 'True' | 'False' | 'Unknown';
  /** Moved, MovedWithDeclined, Running, Failed or Refused */
  reason: string;
  message: string;
  lastTransitionTime: string;
}

const str = { type: 'string' };
const int = { type: 'integer' };

/** The CRD the agent installs: a structural schema of the status above, printer columns for kubectl. */
export const REPORT_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: CRD_NAME },
  spec: {
    group: REPORT_GROUP,
    scope: 'Cluster',
    names: { plural: REPORT_PLURAL, singular: 'siterelocation', kind: REPORT_KIND, listKind: `${REPORT_KIND}List` },
    versions: [
      {
        name: REPORT_VERSION,
        served: true,
        storage: true,
        additionalPrinterColumns: [
          { name: 'Site', type: 'string', jsonPath: '.status.site' },
          { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
          { name: 'Step', type: 'string', jsonPath: '.status.currentStep' },
          { name: 'Updated', type: 'date', jsonPath: '.status.updatedAt' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: "sno-relocate's progress on this cluster, written by the agent on the node",
            properties: {
              apiVersion: str,
              kind: str,
              metadata: { type: 'object' },
              status: {
                type: 'object',
                properties: {
                  site: str,
                  phase: { type: 'string', enum: ['Running', 'Succeeded', 'Failed', 'Refused'] },
                  currentStep: str,
                  message: str,
                  startedAt: str,
                  finishedAt: str,
                  steps: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: {
                        name: str,
                        status: str,
                        attempts: int,
                        startedAt: str,
                        finishedAt: str,
                        durationMs: int,
                        message: str,
                      },
                    },
                  },
                  watcherErrorCount: int,
                  siteCACertificate: str,
                  clusterID: str,
                  infraID: str,
                  mediaInfraID: str,
                  warnings: { type: 'array', items: str },
                  unusedFields: { type: 'array', items: str },
                  declined: str,
                  conditions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: { type: str, status: str, reason: str, message: str, lastTransitionTime: str },
                    },
                  },
                  agentVersion: str,
                  updatedAt: str,
                },
              },
            },
          },
        },
      },
    ],
  },
};

const PHASE: Record<RunState['result'], Phase> = {
  running: 'Running',
  succeeded: 'Succeeded',
  failed: 'Failed',
  refused: 'Refused',
};

export interface ReportContext {
  fs: RootFs;
  clock: Clock;
  log: Logger;
  stateDir: string;
  /** what the config media asks beyond the native site-config (absent for a native one) */
  imageBased?: ImageBasedSite;
}

/** The media's identity against the cluster's, for the hub: IDs, names and field paths only. */
export async function imageBasedStatus(kube: Kube, media: ImageBasedSite): Promise<Partial<ReportStatus>> {
  const cluster = await readClusterIdentity(kube);
  const warning = infraIdWarning(media, cluster);
  return {
    ...(cluster.clusterID !== undefined && { clusterID: cluster.clusterID }),
    ...(cluster.infrastructureName !== undefined && { infraID: cluster.infrastructureName }),
    ...(warning && { mediaInfraID: media.infraID, warnings: [warning] }),
    ...(media.unused.length > 0 && { unusedFields: media.unused.map((u) => u.field) }),
  };
}

/** InService from the run: True once it succeeded, its message naming every change it declined. */
export function inServiceCondition(state: RunState): InServiceCondition {
  const declined = declinedSteps(state);
  const at = state.finishedAt ?? state.startedAt;
  const of = (status: InServiceCondition['status'], reason: string, message: string): InServiceCondition => ({
    type: 'InService',
    status,
    reason,
    message,
    lastTransitionTime: at,
  });
  if (state.result === 'running') return of('Unknown', 'Running', `the move of site ${state.site} is running`);
  if (state.result !== 'succeeded')
    return of('False', PHASE[state.result], `the move of site ${state.site} ${state.result}: ${state.message ?? ''}`);
  if (declined.length === 0) return of('True', 'Moved', `site ${state.site} is configured`);
  return of('True', 'MovedWithDeclined', `site ${state.site} is configured; declined: ${declined.join('; ')}`);
}

/** The status as it stands, from the run's state, the watcher's status file and the site CA. */
export async function reportStatus(ctx: ReportContext, state: RunState): Promise<ReportStatus> {
  const steps = Object.entries(state.steps).map(([name, r]) => ({
    name,
    status: r.status,
    attempts: r.attempts,
    startedAt: r.startedAt,
    ...(r.finishedAt !== undefined && { finishedAt: r.finishedAt }),
    ...(r.durationMs !== undefined && { durationMs: r.durationMs }),
    ...(r.message !== undefined && { message: r.message }),
  }));
  const current = steps.find((s) => s.status === 'running') ?? steps.find((s) => s.status === 'failed');
  const watch = await readWatchStatus(ctx.fs, ctx.stateDir).catch(() => undefined);
  const ca = await ctx.fs.readText(caPaths(ctx.stateDir).cert).catch(() => undefined);
  return {
    site: state.site,
    phase: PHASE[state.result],
    ...(current && { currentStep: current.name }),
    ...(state.message !== undefined && { message: state.message }),
    startedAt: state.startedAt,
    ...(state.finishedAt !== undefined && { finishedAt: state.finishedAt }),
    steps,
    watcherErrorCount: watch ? Object.values(watch.syncErrors).reduce((a, b) => a + b, 0) : 0,
    ...(ca && { siteCACertificate: ca }),
    declined: declinedSteps(state).join('; '),
    conditions: [inServiceCondition(state)],
    agentVersion: AGENT_VERSION,
    updatedAt: ctx.clock.now().toISOString(),
  };
}

type CrdObject = KubeObject & {
  spec?: { versions?: { schema?: { openAPIV3Schema?: { properties?: { status?: { properties?: object } } } } }[] };
};

/** Whether the cluster's CRD has every status field of this agent (one made by an older agent may not). */
const servesAllFields = (crd: CrdObject): boolean => {
  const served = crd.spec?.versions?.[0]?.schema?.openAPIV3Schema?.properties?.status?.properties ?? {};
  const ours = REPORT_CRD.spec.versions[0]!.schema.openAPIV3Schema.properties.status.properties;
  return Object.keys(ours).every((field) => field in served);
};

/**
 * Installs the CRD when the cluster lacks it, or updates its schema when an older agent's lacks a
 * field of this one (the API server would prune that field from every status written), and waits
 * (bounded) until it is served.
 */
export async function ensureReportCrd(kube: Kube, clock: Clock): Promise<void> {
  const ref = { apiVersion: REPORT_CRD.apiVersion, kind: REPORT_CRD.kind, name: CRD_NAME };
  const crd = await kube.get<CrdObject>(ref);
  if (crd && established(crd) && servesAllFields(crd)) return;
  if (!crd) await kube.create(REPORT_CRD as unknown as KubeObject);
  else if (!servesAllFields(crd))
    await kube.update<CrdObject>(ref, (current) => ({
      ...current,
      spec: { ...current.spec, versions: REPORT_CRD.spec.versions },
    }));
  await waitForCrd(kube, clock, CRD_NAME);
}

/** Writes the status onto the cluster's SiteRelocation, creating it (and its CRD) the first time. */
export async function publishReport(kube: Kube, clock: Clock, status: ReportStatus): Promise<void> {
  await ensureReportCrd(kube, clock);
  const ref = { apiVersion: REPORT_API_VERSION, kind: REPORT_KIND, name: REPORT_NAME };
  // replaced whole, not merged: a field the run no longer has (the current step at the end) must go
  if (await kube.get(ref)) await kube.update(ref, (current) => ({ ...current, status }));
  else
    await kube.create({
      apiVersion: REPORT_API_VERSION,
      kind: REPORT_KIND,
      metadata: { name: REPORT_NAME, labels: { 'app.kubernetes.io/managed-by': 'sno-relocate' } },
      status,
    });
}

/**
 * The engine's observer for a run: publishes once the API can answer (kubelet is up: the kubelet
 * step is done, in this run or a resumed one), and from then on at every change. A failure to
 * publish is logged once and never fails the run; the next change tries again.
 */
export function hubObserver(ctx: ReportContext, kube: () => Promise<Kube>): (state: RunState) => Promise<void> {
  let warned = false;
  return async (state) => {
    if (state.steps.kubelet?.status !== 'done') return;
    try {
      const client = await kube();
      const status = await reportStatus(ctx, state);
      if (ctx.imageBased) Object.assign(status, await imageBasedStatus(client, ctx.imageBased));
      await publishReport(client, ctx.clock, status);
    } catch (err) {
      if (!warned)
        ctx.log.warn({ err }, `hub report ${REPORT_KIND} ${REPORT_NAME} not written: ${(err as Error).message}`);
      warned = true;
    }
  };
}
