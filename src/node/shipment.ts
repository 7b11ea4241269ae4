/**
 * The shipment record `factory seal` leaves in the state folder (shipment.json): when the node was
 * sealed, the shelf time it was checked for, what the check warned about, and the power-on-by
 * date: the earliest expiry nobody renews while the node is off, less a safety margin. The site
 * run reads it for the clock (the seal is a lower bound for the true time) and the shelf life.
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
