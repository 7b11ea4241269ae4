/**
 * CustomResourceDefinitions the agent installs (its own SiteRelocation) or applies (a site's extra
 * manifests): a custom resource of a new kind can be written only once its CRD is Established and
 * the API serves the kind, which takes the API server a moment after the CRD is created.
 */
import { StepError } from '../base/errors.js';
import { CRD_ESTABLISH_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { type Clock, pollUntil } from '../ports/clock.js';
import type { Kube, KubeObject } from '../ports/kube.js';

export const CRD_API_VERSION = 'apiextensions.k8s.io/v1';
export const CRD_KIND = 'CustomResourceDefinition';

export const established = (crd: KubeObject | undefined): boolean =>
  ((crd?.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).some(
    (c) => c.type === 'Established' && c.status === 'True',
  );

/**
 * Waits (bounded) until the CRD is Established and, when given, its kind is served: discovery is
 * asked again, since an answer from before the CRD existed is cached.
 */
export async function waitForCrd(
  kube: Kube,
  clock: Clock,
  name: string,
  serves?: { apiVersion: string; kind: string },
): Promise<void> {
  const ref = { apiVersion: CRD_API_VERSION, kind: CRD_KIND, name };
  const ok = await pollUntil(
    clock,
    async () =>
      established(await kube.get(ref)) &&
      (!serves || (await kube.serves(serves.apiVersion, serves.kind, { fresh: true })))
        ? true
        : undefined,
    { timeoutMs: CRD_ESTABLISH_TIMEOUT_SECONDS * 1000, intervalMs: 200, maxIntervalMs: 1000 },
  );
  if (!ok)
    throw new StepError(`${CRD_KIND} ${name} not established after ${CRD_ESTABLISH_TIMEOUT_SECONDS} s`, {
      retryable: true,
    });
}
