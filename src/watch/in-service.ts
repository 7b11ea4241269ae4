/**
 * Whether the site's own workloads (and URL) are in service, as the site-config's `inService`
 * names them: each Deployment, StatefulSet or DaemonSet rolled out and available, the URL
 * answering 2xx from the node. The in-service step waits for it; health watches it through its window.
 */
import http from 'node:http';
import https from 'node:https';
import type { InService, Site } from '../config/site.js';
import type { Workload } from '../config/v1/schema.js';
import { errorMessage } from '../base/errors.js';
import { workloadNotReady, type WorkloadObject } from '../kube/workloads.js';
import type { Kube } from '../ports/kube.js';

/** what the readiness checks need of a step's context: the API */
interface KubeOf {
  kube(): Promise<Kube>;
}

const APPS = 'apps/v1';
/** one probe's bound: a site service answers at once or not at all */
const PROBE_TIMEOUT_MS = 5_000;

export interface Waiting {
  /** `Deployment vdu/du-app`, `DaemonSet vdu (app=du)`, `https://...` */
  what: string;
  why: string;
}

export const describeWorkload = (w: Workload): string =>
  w.name !== undefined ? `${w.kind} ${w.namespace}/${w.name}` : `${w.kind} ${w.namespace} (${w.selector})`;

async function workloadWaiting(kube: Kube, w: Workload): Promise<Waiting[]> {
  const what = describeWorkload(w);
  if (w.name !== undefined) {
    const obj = await kube.get<WorkloadObject>({
      apiVersion: APPS,
      kind: w.kind,
      namespace: w.namespace,
      name: w.name,
    });
    if (!obj) return [{ what, why: 'does not exist' }];
    const why = workloadNotReady(w.kind, obj);
    return why ? [{ what, why }] : [];
  }
  const found = await kube.list<WorkloadObject>(APPS, w.kind, { namespace: w.namespace, labelSelector: w.selector! });
  if (found.length === 0) return [{ what, why: 'none exists' }];
  return found.flatMap((obj) => {
    const why = workloadNotReady(w.kind, obj);
    return why ? [{ what: `${w.kind} ${w.namespace}/${obj.metadata.name}`, why }] : [];
  });
}

/** Fetches the URL from the node; undefined when it answered 2xx. */
export function probeProblem(probe: NonNullable<InService['probe']>): Promise<string | undefined> {
  const url = new URL(probe.url);
  const get = url.protocol === 'https:' ? https.get : http.get;
  return new Promise((resolve) => {
    const req = get(
      url,
      { timeout: PROBE_TIMEOUT_MS, ...(url.protocol === 'https:' && { rejectUnauthorized: !probe.insecure }) },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(code >= 200 && code < 300 ? undefined : `answered ${code}`);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`)));
    req.on('error', (err) => resolve(errorMessage(err)));
  });
}

/** Everything not ready yet, in the site-config's order: workloads first, then the probe. */
export async function waiting(ctx: KubeOf, spec: InService): Promise<Waiting[]> {
  const kube = spec.workloads.length > 0 ? await ctx.kube() : undefined;
  const out: Waiting[] = [];
  for (const w of spec.workloads) out.push(...(await workloadWaiting(kube!, w)));
  if (spec.probe) {
    const why = await probeProblem(spec.probe);
    if (why) out.push({ what: spec.probe.url, why });
  }
  return out;
}

/**
 * Whether every workload (and URL) the site-config names is ready now; health asks it while it
 * waits for the cluster, and records the run in which they were ready through its whole window.
 */
export const inServiceReady = async (ctx: KubeOf & { site: Pick<Site, 'inService'> }): Promise<boolean> =>
  !ctx.site.inService || (await waiting(ctx, ctx.site.inService)).length === 0;
