/**
 * What the time already proves when a site-config is admitted, before the first change on the
 * host. The true time is no earlier than the lower bound (the newest of the site-config's signing
 * time, the factory seal and the agent's build: src/base/true-time.ts), whatever the node's clock
 * reads; on a clock chronyd has synchronised, or that none will, it is the clock. What expired
 * before that instant is refused here, at admission: a finding admission deferred to the clock step
 * (a signature or CA past its notAfter) and a shelf life past the expiry it guards. The clock step
 * judges the rest again on the synchronised clock, after the network and the time servers.
 *
 * Near the power-on-by date the technician is warned on the console, with the date and the days
 * left (at most that many, on the lower bound of an unsynchronised clock).
 */
import { RefusedError } from '../base/errors.js';
import type { Finding } from '../base/findings.js';
import { expiredAt, lowerBound, type TimeMark } from '../base/true-time.js';
import type { LoadedSite } from '../config/site.js';
import type { Banner } from '../engine/banner.js';
import type { Logger } from '../log/logger.js';
import type { RootFs } from '../ports/fs.js';
import { readShipment, shelfLife, type Shipment } from './shipment.js';

export interface ProvenTimeInput {
  /** the node's clock */
  now: Date;
  /** whether the clock may be believed: chronyd synchronised it, or none will (admission does not defer time) */
  trusted: boolean;
  marks: readonly TimeMark[];
  deferred: readonly Finding[];
  powerOnBy?: NonNullable<Shipment['powerOnBy']>;
}

export interface ProvenTime {
  /** the instant the true time is proven no earlier than, and what proves it */
  at?: TimeMark;
  /** what already expired at that instant */
  refusals: string[];
  /** near or past the power-on-by date (before its expiry): the console's WARN line */
  warning?: string;
}

/** Pure: what the lower bound (or a trusted clock) proves of the deferred findings and the shelf life. */
export function provenTime(input: ProvenTimeInput): ProvenTime {
  const bound = lowerBound(input.marks);
  const clock = { what: "node's clock", at: input.now };
  const at = input.trusted ? lowerBound([...(bound ? [bound] : []), clock]) : bound;
  if (!at) return { refusals: [] };
  const refusals = expiredAt(input.deferred, at.at);
  const shelf = input.powerOnBy && shelfLife(at.at, input.powerOnBy);
  if (shelf?.verdict === 'refuse') refusals.push(shelf.reason);
  const warning =
    shelf?.verdict === 'warn'
      ? `WARN ${shelf.line}${at === clock ? '' : ` (at most, counted from the ${at.what} at ${at.at.toISOString()}: the clock is not synchronised yet)`}`
      : undefined;
  return { at, refusals, ...(warning !== undefined && { warning }) };
}

export interface ProvenTimeContext {
  fs: RootFs;
  stateDir: string;
  log: Logger;
  banner: Banner;
}

/**
 * The admission rule (src/config/admit.ts runs it after the trust anchors, which add the signing
 * time): refuses, with nothing on the host changed, what the time already proves expired, and warns
 * on the console near the power-on-by date.
 */
export async function checkProvenTime(
  ctx: ProvenTimeContext,
  loaded: LoadedSite,
  now: Date,
  trusted: boolean,
): Promise<void> {
  const shipment = await readShipment(ctx.fs, ctx.stateDir);
  const proven = provenTime({
    now,
    trusted,
    marks: loaded.timeMarks ?? [],
    deferred: loaded.deferred ?? [],
    ...(shipment?.powerOnBy && { powerOnBy: shipment.powerOnBy }),
  });
  if (proven.refusals.length > 0 && proven.at) {
    const reason = `site-config refused: the true time is no earlier than the ${proven.at.what} (${proven.at.at.toISOString()}), and by then ${proven.refusals.join('; ')}; nothing on the host was changed`;
    ctx.log.error({ provenBy: proven.at.what, at: proven.at.at.toISOString() }, reason);
    await ctx.banner.show(reason);
    throw new RefusedError(reason);
  }
  if (proven.warning) {
    ctx.log.warn(proven.warning);
    await ctx.banner.show(proven.warning);
  }
}
