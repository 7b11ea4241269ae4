/**
 * How the watcher declares a resource it follows, and the projection that keeps only what the checks
 * read of each object: a CSV's spec or a CRD's schema runs to hundreds of kilobytes, and a cluster
 * with many namespaces holds a copy of every CSV in each.
 */
import type { Component, WatchedMeta, WatchedObject } from './model.js';

export interface WatchedResource {
  /** key in the snapshot: the plural, except `crds` */
  key: string;
  component: Component;
  group: string;
  /** in order of preference */
  versions: readonly string[];
  plural: string;
  kind: string;
  /** built into the API server (core, apiregistration, apiextensions): never "not installed" */
  builtIn?: { version: string };
  /** served only where HyperShift runs: its absence is the normal case and not reported */
  optional?: true;
  fieldSelector?: string;
  /** undefined: not kept */
  project(raw: RawObject): WatchedObject | undefined;
}

export interface RawObject {
  metadata?: {
    name?: string;
    namespace?: string;
    generation?: number;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    managedFields?: { manager?: string }[];
    resourceVersion?: string;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [field: string]: unknown;
}

export function meta(
  raw: RawObject,
  keep: { labels?: boolean; annotations?: boolean | readonly string[]; managers?: boolean } = {},
): WatchedMeta {
  const m = raw.metadata ?? {};
  const out: WatchedMeta = { name: m.name ?? '' };
  if (m.namespace) out.namespace = m.namespace;
  if (m.generation !== undefined) out.generation = m.generation;
  if (m.creationTimestamp) out.creationTimestamp = m.creationTimestamp;
  if (keep.labels && m.labels) out.labels = m.labels;
  if (keep.annotations && m.annotations) {
    const wanted = keep.annotations;
    out.annotations =
      wanted === true
        ? m.annotations
        : Object.fromEntries(Object.entries(m.annotations).filter(([k]) => wanted.some((p) => k.startsWith(p))));
  }
  if (keep.managers && m.managedFields)
    out.managers = [...new Set(m.managedFields.map((f) => f.manager ?? '').filter(Boolean))].sort();
  return out;
}

export const pick = (
  value: Record<string, unknown> | undefined,
  fields: readonly string[],
): Record<string, unknown> | undefined => {
  if (!value) return undefined;
  const out = Object.fromEntries(fields.filter((f) => value[f] !== undefined).map((f) => [f, value[f]]));
  return Object.keys(out).length > 0 ? out : undefined;
};

export const object = (
  metadata: WatchedMeta,
  spec?: Record<string, unknown>,
  status?: Record<string, unknown>,
): WatchedObject => ({
  metadata,
  ...(spec && { spec }),
  ...(status && { status }),
});
