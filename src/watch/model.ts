/**
 * What the watcher sees and what it concludes: the watched objects (trimmed to the fields the checks
 * read), the site context the checks compare them with, and the findings.
 */

export type Severity = 'info' | 'warning' | 'error';
export const SEVERITIES: readonly Severity[] = ['info', 'warning', 'error'];
export const severityRank = (s: Severity): number => SEVERITIES.indexOf(s);

export type Component = 'olm' | 'capi' | 'layering' | 'operators';
export const COMPONENTS: readonly Component[] = ['olm', 'capi', 'layering', 'operators'];

export interface Finding {
  component: Component;
  /** `Kind namespace/name`, or the kind alone for "not installed" */
  object: string;
  severity: Severity;
  /** stable while the condition holds, so a finding that persists is not reported again */
  reason: string;
  /** ISO time the condition began: the object's own transition time, else when the watcher first saw it */
  since?: string;
  /** what to look at or do about it */
  hint?: string;
}

/**
 * A finding as a check makes it: a condition that is harmless for a while (a catalog connecting, a
 * build running) carries the severity it reaches once it has held for `afterMs`.
 */
export interface RawFinding extends Finding {
  escalate?: { afterMs: number; to: Severity };
}

export type Health = 'unknown' | 'healthy' | 'degraded' | 'unhealthy';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  severity?: string;
}

export interface WatchedMeta {
  name: string;
  namespace?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** the field managers named in metadata.managedFields */
  managers?: string[];
}

/** A watched object as kept: metadata trimmed, spec and status as the projection of its resource leaves them. */
export interface WatchedObject {
  metadata: WatchedMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** What the checks compare the cluster with: the site the node was moved to and the factory it left. */
export interface WatchContext {
  /** registry hosts (host[:port]) the site mirrors to */
  siteRegistries: string[];
  /** mirror sources for pulls by digest (ImageDigestMirrorSet) */
  digestMirrorSources: string[];
  /** mirror sources for pulls by tag (ImageTagMirrorSet) */
  tagMirrorSources: string[];
  /** registry hosts of the factory: nothing at the site should still pull from or push to them */
  factoryRegistries: string[];
}

export const EMPTY_CONTEXT: WatchContext = {
  siteRegistries: [],
  digestMirrorSources: [],
  tagMirrorSources: [],
  factoryRegistries: [],
};

/** The observed objects by resource key (see resources.ts), and which resources the cluster serves. */
export interface Snapshot {
  installed(resource: string): boolean;
  list(resource: string): readonly WatchedObject[];
  get(resource: string, name: string, namespace?: string): WatchedObject | undefined;
}

export const conditionsOf = (obj: WatchedObject | undefined): Condition[] => {
  const conditions = obj?.status?.conditions;
  return Array.isArray(conditions) ? (conditions as Condition[]) : [];
};

export const conditionOf = (obj: WatchedObject | undefined, type: string): Condition | undefined =>
  conditionsOf(obj).find((c) => c.type === type);

export const isTrue = (obj: WatchedObject | undefined, type: string): boolean =>
  conditionOf(obj, type)?.status === 'True';

export const nameOf = (kind: string, obj: WatchedObject): string =>
  `${kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`;

export const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/** `reason: message` of a condition, for a finding's reason */
export const describeCondition = (c: Condition): string => [c.reason, c.message].filter(Boolean).join(': ');
