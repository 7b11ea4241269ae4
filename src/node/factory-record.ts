/**
 * What `factory prepare` decided, kept at /etc/sno-relocate/factory.json: the address the
 * installation gave br-ex, its subnet, and the internal IP pinned to it, one per IP family of the
 * node (a dual-stack node's other family in the `secondary` fields, the primary family first, as
 * the Node lists its InternalIPs). The node's etcd member, its serving certificates and its Node
 * object keep those addresses, so a site-config whose internal IPs are off an install subnet, of a
 * family the node does not have, or in another family order, is refused (exit 3) at admission, by
 * validate, plan and run alike, before anything changes.
 *
 * The record is a file of the MachineConfig 51-master-sno-relocate-internal-ip, beside the files
 * pinning that address: rendered before installation (`prepare --manifests`, no node name yet) the
 * node has it from its first boot; on the running node `prepare` writes it at once as well. Once
 * the machine-config daemon's config declares it, the daemon owns it: prepare keeps a record that
 * still holds, byte for byte, so its MachineConfig stays unchanged, and never writes other contents.
 *
 * A record made on the running node also names the node's key (its age recipient, the inventory's
 * node-key column). A record made before that (rendered before installation, where the node has no
 * key yet, or by a release before node keys) has no such field: it reads as a record whose node key
 * is absent, never as drift, and is kept as it is, since changing it would change its MachineConfig
 * and reboot the node for a value /etc/sno-relocate/node-key.json holds anyway.
 */
import * as z from 'zod';
import { formatCidr, networkAddress, parseCidr, subnetContains } from '../base/addresses.js';
import { RefusedError } from '../base/errors.js';
import type { Site } from '../config/site.js';
import type { RootFs } from '../ports/fs.js';
import { readJsonFile } from '../ports/json-file.js';
import { AGE_RECIPIENT } from '../trust/node-key.js';
import { FACTORY_RECORD } from '../base/node-files.js';
import type { InternalIPs } from './internal-ip.js';

const RecordSchema = z.object({
  version: z.literal(1),
  /** the Node's name; absent in a record rendered before installation */
  node: z.string().optional(),
  installAddress: z.string(),
  installSubnet: z.string(),
  internalIP: z.string(),
  /** dual-stack: the other family's, absent on a single-stack node (and in records before them) */
  secondaryInstallAddress: z.string().optional(),
  secondaryInstallSubnet: z.string().optional(),
  secondaryInternalIP: z.string().optional(),
  /** the node key's age recipient; absent in a record made before the node had a key */
  nodeKey: z.string().regex(AGE_RECIPIENT).optional(),
  preparedAt: z.string(),
});
export type FactoryRecord = z.infer<typeof RecordSchema>;

/** The subnet a CIDR address lies in, as network/prefix: 192.168.127.0/24 for 192.168.127.10/24. */
export const subnetOf = (cidr: string): string => `${networkAddress(cidr)}/${parseCidr(cidr).prefix}`;

/**
 * The record of these install addresses (one, or one per family with the primary family first) and,
 * on the running node, its key's recipient.
 */
export function makeRecord(
  node: string | undefined,
  installAddresses: InternalIPs,
  now: Date,
  nodeKey?: string,
): FactoryRecord {
  const [cidr, secondary] = (typeof installAddresses === 'string' ? [installAddresses] : installAddresses).map((a) =>
    formatCidr(parseCidr(a)),
  );
  return {
    version: 1,
    ...(node !== undefined && { node }),
    installAddress: cidr!,
    installSubnet: subnetOf(cidr!),
    internalIP: cidr!,
    ...(secondary !== undefined && {
      secondaryInstallAddress: secondary,
      secondaryInstallSubnet: subnetOf(secondary),
      secondaryInternalIP: secondary,
    }),
    ...(nodeKey !== undefined && { nodeKey }),
    preparedAt: now.toISOString(),
  };
}

/** One family's part of a record. */
interface RecordedFamily {
  family: 4 | 6;
  installAddress: string;
  installSubnet: string;
  internalIP: string;
}

/** The record's families, the primary first. */
export function recordedFamilies(record: FactoryRecord): RecordedFamily[] {
  const primary = {
    installAddress: record.installAddress,
    installSubnet: record.installSubnet,
    internalIP: record.internalIP,
  };
  const secondary =
    record.secondaryInstallAddress !== undefined &&
    record.secondaryInstallSubnet !== undefined &&
    record.secondaryInternalIP !== undefined
      ? {
          installAddress: record.secondaryInstallAddress,
          installSubnet: record.secondaryInstallSubnet,
          internalIP: record.secondaryInternalIP,
        }
      : undefined;
  return [primary, ...(secondary ? [secondary] : [])].map((f) => ({ ...f, family: parseCidr(f.internalIP).family }));
}

/** The internal IPs the record pins, the primary family's first. */
export const recordedInternalIPs = (record: FactoryRecord): string[] =>
  recordedFamilies(record).map((f) => f.internalIP);

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

const FIELDS = ['$.spec.network.internalIP', '$.spec.network.secondaryInternalIP'] as const;
const familyName = (family: 4 | 6) => `IPv${family}`;

/**
 * Why this site's network cannot be used on the prepared node, each naming its field; empty when it
 * can. Per family: an internal IP on that family's install subnet, no family the node was not
 * installed with (internal IPs and machine networks alike), and the node's primary family first.
 */
export function siteAgainstRecord(
  record: FactoryRecord,
  network: Pick<Site['network'], 'internalIP' | 'secondaryInternalIP' | 'machineNetworks'>,
): string[] {
  const recorded = recordedFamilies(record);
  const has = recorded.map((f) => familyName(f.family)).join(' and ');
  const where = `recorded by factory prepare in ${FACTORY_RECORD}`;
  const out: string[] = [];
  const wanted = [network.internalIP, network.secondaryInternalIP];
  wanted.forEach((ip, i) => {
    if (ip === undefined) return;
    const parsed = parseCidr(ip);
    const field = FIELDS[i]!;
    const mine = recorded.find((f) => f.family === parsed.family);
    if (!mine) {
      out.push(
        `${field}: ${formatCidr(parsed)} is ${familyName(parsed.family)}, but this node was installed ${has} only (${where}): the cluster cannot take another family at a site`,
      );
      return;
    }
    if (!inSubnet(ip, mine.installSubnet))
      out.push(
        `${field}: ${formatCidr(parsed)} is off the install subnet ${mine.installSubnet} of this node (${where}): the node's etcd member, serving certificates and Node object keep the install address ${parseCidr(mine.installAddress).ip}; leave it out or set it to ${mine.internalIP}`,
      );
  });
  const given = wanted.filter((ip): ip is string => ip !== undefined).map((ip) => parseCidr(ip).family);
  const missing = recorded.filter((f) => given.length > 0 && !given.includes(f.family));
  if (missing.length > 0)
    out.push(
      `${FIELDS[0]}: the internal IPs are ${given.map(familyName).join(' and ')} only, but this node was installed ${has} (${where}): give one per family, ${familyName(recorded[0]!.family)} first, or leave them out`,
    );
  const first = network.internalIP !== undefined ? parseCidr(network.internalIP).family : undefined;
  if (
    recorded.length > 1 &&
    first !== undefined &&
    first !== recorded[0]!.family &&
    recorded.some((f) => f.family === first)
  )
    out.push(
      `${FIELDS[0]}: ${network.internalIP} is ${familyName(first)}, but this node's primary family is ${familyName(recorded[0]!.family)} (${where}): give the ${familyName(recorded[0]!.family)} internal IP first and the other in secondaryInternalIP`,
    );
  const foreign = [...new Set(network.machineNetworks.map((c) => parseCidr(c).family))].filter(
    (family) => !recorded.some((f) => f.family === family),
  );
  if (foreign.length > 0)
    out.push(
      `$.spec.network.machineNetworks: ${foreign.map(familyName).join(' and ')}, but this node was installed ${has} only (${where})`,
    );
  return out;
}

/** Refuses (exit 3) a site-config whose network the prepared node cannot take (siteAgainstRecord). */
export async function checkSiteAgainstRecord(fs: RootFs, site: Site): Promise<void> {
  const record = await readFactoryRecord(fs);
  const reasons = record ? siteAgainstRecord(record, site.network) : [];
  if (reasons.length > 0)
    throw new RefusedError(`site-config refused: ${reasons.join('; ')}; nothing on the host was changed`);
}
