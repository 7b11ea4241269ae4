/**
 * What `factory prepare` decided, kept at /etc/sno-relocate/factory.json: the address the
 * installation gave br-ex, its subnet, and the internal IP pinned to it. The node's etcd member,
 * its serving certificates and its Node object keep that address, so a site-config that moves the
 * internal IP off the install subnet is refused (exit 3) before anything changes.
 *
 * The record is a file of the MachineConfig 51-master-sno-relocate-internal-ip, beside the files
 * pinning that address: rendered before installation (`prepare --manifests`, no node name yet) the
 * node has it from its first boot; on the running node `prepare` writes it at once as well. Once
 * the machine-config daemon's config declares it, the daemon owns it: prepare keeps a record that
 * still holds, byte for byte, so its MachineConfig stays unchanged, and never writes other contents.
 */
import * as z from 'zod';
import { formatCidr, networkAddress, parseCidr, subnetContains } from '../base/addresses.js';
import { RefusedError } from '../base/errors.js';
import type { Site } from '../config/site.js';
import type { RootFs } from '../ports/fs.js';
import { readJsonFile } from '../ports/json-file.js';
import { FACTORY_RECORD } from './machineconfig.js';

const RecordSchema = z.object({
  version: z.literal(1),
  /** the Node's name; absent in a record rendered before installation */
  node: z.string().optional(),
  installAddress: z.string(),
  installSubnet: z.string(),
  internalIP: z.string(),
  preparedAt: z.string(),
});
export type FactoryRecord = z.infer<typeof RecordSchema>;

/** The subnet a CIDR address lies in, as network/prefix: 192.168.127.0/24 for 192.168.127.10/24. */
export const subnetOf = (cidr: string): string => `${networkAddress(cidr)}/${parseCidr(cidr).prefix}`;

export function makeRecord(node: string | undefined, installAddress: string, now: Date): FactoryRecord {
  const cidr = formatCidr(parseCidr(installAddress));
  return {
    version: 1,
    ...(node !== undefined && { node }),
    installAddress: cidr,
    installSubnet: subnetOf(cidr),
    internalIP: cidr,
    preparedAt: now.toISOString(),
  };
}

/** The record as its file holds it (on the node and in its MachineConfig alike). */
export const recordText = (record: FactoryRecord): string => `${JSON.stringify(record, null, 2)}\n`;

/** A record's text, if it is one (from a MachineConfig or the daemon's config); undefined otherwise. */
export function parseRecord(text: string | undefined): FactoryRecord | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = RecordSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export async function readFactoryRecord(fs: RootFs): Promise<FactoryRecord | undefined> {
  return readJsonFile(fs, FACTORY_RECORD, {
    what: 'factory record',
    schema: RecordSchema,
    advice: 'run factory prepare again',
  });
}

export async function writeFactoryRecord(fs: RootFs, record: FactoryRecord): Promise<void> {
  await fs.mkdirp('/etc/sno-relocate', 0o755);
  await fs.writeAtomic(FACTORY_RECORD, recordText(record), { mode: 0o644 });
}

/** Whether an address (CIDR) lies in a subnet with the subnet's prefix length. */
export function inSubnet(address: string, subnet: string): boolean {
  const a = parseCidr(address);
  const net = parseCidr(subnet);
  return a.family === net.family && a.prefix === net.prefix && subnetContains(subnet, a.ip);
}

/** Why this site's internal IP cannot be used on the prepared node, or undefined when it can. */
export function offInstallSubnet(record: FactoryRecord, internalIP: string): string | undefined {
  if (inSubnet(internalIP, record.installSubnet)) return undefined;
  const wanted = parseCidr(internalIP);
  const address = parseCidr(record.installAddress).ip;
  return `$.spec.network.internalIP: ${formatCidr(wanted)} is off the install subnet ${record.installSubnet} of this node (recorded by factory prepare in ${FACTORY_RECORD}): the node's etcd member, serving certificates and Node object keep the install address ${address}; leave internalIP out or set it to ${record.internalIP}`;
}

/** Refuses (exit 3) a site-config that moves the internal IP off the prepared node's install subnet. */
export async function checkSiteAgainstRecord(fs: RootFs, site: Site): Promise<void> {
  const internalIP = site.network.internalIP;
  if (internalIP === undefined) return;
  const record = await readFactoryRecord(fs);
  const reason = record && offInstallSubnet(record, internalIP);
  if (reason) throw new RefusedError(`site-config refused: ${reason}; nothing on the host was changed`);
}
