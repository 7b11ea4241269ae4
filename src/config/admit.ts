/**
 * The one way a site-config is admitted, for every command that acts on one: located and read
 * with bounds and digests, parsed, checked by the rules (loadSiteConfig), then held to the node's
 * own rules in order: who wrote it (the trust anchors), what the node was prepared for (the
 * factory record). All of it finishes before the first change on the host, at the time passed in.
 *
 * The node's rules live in the layers that own what they read (src/trust, src/factory), above this
 * one; the caller hands them in, so the order is decided here, once.
 */
import { loadSiteConfig } from './load.js';
import type { LoadedSite } from './site.js';

/** A check of a read and valid site-config against the node: throws (a refusal) when it does not hold. */
export interface AdmissionRule {
  name: string;
  check(loaded: LoadedSite): Promise<void>;
}

export interface Admission {
  /** the time certificates are judged at */
  now: Date;
  /** the node's rules, in the order they apply: trust first, then what the node was prepared for */
  rules: readonly AdmissionRule[];
}

export async function admitSite(target: string, { now, rules }: Admission): Promise<LoadedSite> {
  const loaded = await loadSiteConfig(target, now);
  for (const rule of rules) await rule.check(loaded);
  return loaded;
}
