/**
 * The shipment record `factory seal` leaves in the state folder (shipment.json): when the node was
 * sealed, the shelf time it was checked for, what the check warned about, and the power-on-by
 * date: the earliest expiry nobody renews while the node is off, less a safety margin. The site
 * run reads it for the clock (the seal is a lower bound for the true time) and the shelf life,
 * judged by shelfLife: at admission on the lower bound of the true time (src/node/proven-time.ts),
 * and by the clock step on the synchronised clock.
 */
import path from 'node:path';
import * as z from 'zod';
import type { RootFs } from '../ports/fs.js';
import { readJsonFile } from '../ports/json-file.js';

export const SHIPMENT_FILE = 'shipment.json';

const ShipmentSchema = z.object({
  shippedAt: z.string(),
  /** the shelf time the check was made for */
  shelfDays: z.number(),
  /** what the check warned about, kept for whoever unpacks the node */
  warnings: z.array(z.string()),
  /** power on by `date`: the earliest `expiry` nothing renews while off (of `certificate`), less a margin */
  powerOnBy: z.object({ date: z.string(), expiry: z.string(), certificate: z.string() }).optional(),
});
export type Shipment = z.infer<typeof ShipmentSchema>;

export async function readShipment(fs: RootFs, stateDir: string): Promise<Shipment | undefined> {
  return readJsonFile(fs, path.posix.join(stateDir, SHIPMENT_FILE), {
    what: 'shipment record',
    schema: ShipmentSchema,
    advice: 'run factory seal again',
  });
}

/** The power-on-by date as the installer and `status` show it. */
export const powerOnByLine = (p: NonNullable<Shipment['powerOnBy']>): string =>
  `power on by ${p.date.slice(0, 10)}: ${p.certificate} expires ${p.expiry.slice(0, 10)} and nothing renews it while the node is off`;

/** warn this long before the power-on-by date */
export const POWER_ON_WARN_DAYS = 14;
const DAY_MS = 86_400_000;

export type ShelfVerdict = { verdict: 'ok' | 'warn'; line: string } | { verdict: 'refuse'; reason: string };

/**
 * The shelf life at `now`: fine, near (or past) the power-on-by date, with the days left, or past
 * the expiry it guards.
 */
export function shelfLife(now: Date, powerOnBy: NonNullable<Shipment['powerOnBy']>): ShelfVerdict {
  const line = `power on by ${powerOnBy.date.slice(0, 10)} (${powerOnBy.certificate} expires ${powerOnBy.expiry})`;
  if (now.getTime() > Date.parse(powerOnBy.expiry))
    return {
      verdict: 'refuse',
      reason: `the node stayed off past its power-on-by date ${powerOnBy.date.slice(0, 10)}: ${powerOnBy.certificate} expired on ${powerOnBy.expiry} and nothing on the node renews it; the cluster cannot recover by itself: recover its certificates (see docs/clock-and-shelf-life.md) before relocating`,
    };
  const left = Math.ceil((Date.parse(powerOnBy.date) - now.getTime()) / DAY_MS);
  if (left <= POWER_ON_WARN_DAYS)
    return {
      verdict: 'warn',
      line: `${line}: ${left > 0 ? `${left} day(s) left` : `PAST by ${-left} day(s), ${Math.floor((Date.parse(powerOnBy.expiry) - now.getTime()) / DAY_MS)} day(s) before the expiry`}`,
    };
  return { verdict: 'ok', line };
}
