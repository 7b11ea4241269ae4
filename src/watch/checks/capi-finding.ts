/**
 * What the Cluster API checks share: their findings' component, how long an object may stay unready
 * before it is an error, the time a condition has held, and whether an object is paused.
 */
import type { RawFinding, WatchedObject } from '../model.js';

export const MINUTES = 60_000;
export const MACHINE_GRACE_MS = 20 * MINUTES;

export const capiFinding = (object: string, rest: Omit<RawFinding, 'component' | 'object'>): RawFinding => ({
  component: 'capi',
  object,
  ...rest,
});

export const since = (c: { lastTransitionTime?: string } | undefined) =>
  c?.lastTransitionTime ? { since: c.lastTransitionTime } : {};

export const paused = (obj: WatchedObject): boolean =>
  obj.spec?.paused === true || obj.metadata.annotations?.['cluster.x-k8s.io/paused'] !== undefined;
