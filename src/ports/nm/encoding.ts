/**
 * The encodings NetworkManager's D-Bus API uses: connection settings as a{sa{sv}} variants, IPv4
 * DNS servers as integers in network order, IPv6 ones as byte arrays; and the nmstate shapes the
 * translation works on.
 */
import dbus from 'dbus-next';
import type { NmstateState } from '../../base/nmstate.js';
import { canonicalIp } from '../../base/addresses.js';

const { Variant } = dbus;
type Variant = dbus.Variant;

export type Interface = NonNullable<NmstateState['interfaces']>[number];
export type Route = NonNullable<NonNullable<NmstateState['routes']>['config']>[number];
/** connection settings as NetworkManager takes them: section -> key -> variant */
export type Settings = Record<string, Record<string, Variant>>;
/** connection settings as NetworkManager hands them out, variants unwrapped */
export type PlainSettings = Record<string, Record<string, unknown>>;

/** An IPv4 address as NetworkManager's `au` DNS entries hold it: the bytes in network order. */
export function ipv4ToNetworkOrder(ip: string): number {
  const [a, b, c, d] = ip.split('.').map(Number) as [number, number, number, number];
  return (a | (b << 8) | (c << 16) | (d << 24)) >>> 0;
}

export function networkOrderToIpv4(value: number): string {
  return [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, (value >>> 24) & 0xff].join('.');
}

export function ipv6Bytes(ip: string): number[] {
  const [head = '', tail = ''] = canonicalIp(ip).split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const all = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return all.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]);
}

export function bytesToIpv6(bytes: number[]): string {
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
  return canonicalIp(groups.join(':'));
}

/** Unwraps dbus-next variants, recursively, into plain values. */
export function plain(value: unknown): unknown {
  if (value instanceof Variant) return plain(value.value);
  if (Array.isArray(value)) return value.map(plain);
  if (Buffer.isBuffer(value)) return [...value];
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}
