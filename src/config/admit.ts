/**
 * The one way a site-config is admitted, for every command that acts on one: located, read with
 * bounds and digests, parsed and checked by the rules (loadSiteConfig), then held to the node's
 * own rules, in the order fixed here: who wrote it (the trust anchors, which add the signing time
 * to what the true time is known to be no earlier than), then what that time already proves
 * expired (src/node/proven-time.ts), then what the node was prepared for (the factory record).
 * All of it finishes before the first change on the host, at the time passed in.
 *
 * The node's rules live in the layers that own what they read (src/trust, src/node), above this
 * one; the caller hands them in by name, and this file alone decides the order they run in.
 */
import { loadSiteConfig } from './load.js';
import type { Unsealer } from './sealed.js';
import type { LoadedSite } from './site.js';
import type { TimeMark } from '../base/true-time.js';

/** A check of a read and valid site-config against the node: throws (a refusal) when it does not hold. */
export type NodeRule = (loaded: LoadedSite) => Promise<void>;

export interface Admission {
  /** the time certificates are judged at */
  now: Date;
  /**
   * a clock chronyd has not synchronised yet: problems of time alone are deferred to the clock
   * step, not refused (src/base/true-time.ts)
   */
  deferTime?: boolean;
  /** what says the true time is at least some instant: the factory seal, the agent's build */
  timeMarks?: TimeMark[];
  /** who wrote it: the node's trust anchors; undefined only off the node (see offNode) */
  trust: NodeRule | undefined;
  /** what the lower bound of the true time already proves expired; absent only off the node */
  provenTime?: NodeRule;
  /** what the node was prepared for: the factory record's install subnet; undefined only off the node */
  factoryRecord: NodeRule | undefined;
  /** opens fields sealed to the node's key (src/trust/node-key.ts); undefined: they are listed, not read */
  unseal?: Unsealer;
}

/** The order the node's rules run in: who wrote it is settled before what it asks is weighed. */
export const NODE_RULES = ['trust', 'provenTime', 'factoryRecord'] as const;

/**
 * Off the node (rendering or signing a site folder at the author's desk) there are no trust
 * anchors and no factory record to hold a site-config to: it is parsed and checked by the rules
 * only, exactly as the node will parse and check it.
 */
export const offNode = (now: Date): Admission => ({
  now,
  trust: undefined,
  provenTime: undefined,
  factoryRecord: undefined,
});

export async function admitSite(target: string, admission: Admission): Promise<LoadedSite> {
  try {
    const loaded = await loadSiteConfig(target, admission.now, admission.deferTime, admission.unseal);
    loaded.timeMarks = [...(admission.timeMarks ?? [])];
    for (const rule of NODE_RULES) await admission[rule]?.(loaded);
    return loaded;
  } finally {
    // the node's identity lives no longer than admission; the opened secrets stay in memory only
    admission.unseal?.forget();
  }
}
