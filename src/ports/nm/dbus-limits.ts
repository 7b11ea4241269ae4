/**
 * What the D-Bus fallback cannot apply of a desired state: what profiles.ts does not make, named
 * by path, so that the node says what needs nmstatectl instead of applying part of it.
 */
import type { NmstateState } from '../../base/nmstate.js';
import { brExAsLinuxBridge, type TranslationOptions } from './br-ex-bridge.js';
import { connectionType, profilesFor, UnsupportedStateError } from './profiles.js';

/** The parts of an interface this backend turns into profile settings; nmstate knows many more. */
const INTERFACE_KEYS = new Set([
  'name',
  'type',
  'state',
  'mtu',
  'mac-address',
  'ipv4',
  'ipv6',
  'vlan',
  'link-aggregation',
  'bridge',
]);
const IP_KEYS = new Set(['enabled', 'dhcp', 'autoconf', 'address']);
/** what a route may say here: NetworkManager's route-data gets destination, next hop and metric */
const ROUTE_KEYS = new Set(['state', 'destination', 'next-hop-address', 'next-hop-interface', 'metric']);
const NEEDS_NMSTATECTL = 'needs nmstatectl';

/**
 * What the D-Bus fallback cannot apply of a desired state, one line per feature with its path:
 * interface types and settings it does not make (OVS, DPDK, SR-IOV, 802.1X, ...), route fields
 * beyond destination, next hop and metric, route rules, DNS options, Open vSwitch's database.
 */
export function unsupportedThroughDbus(desired: NmstateState, options: TranslationOptions = {}): string[] {
  const state = options.brExAsLinuxBridge ? brExAsLinuxBridge(desired) : desired;
  const out: string[] = [];
  for (const key of ['route-rules', 'ovs-db', 'ovn'] as const)
    if ((state as Record<string, unknown>)[key] !== undefined) out.push(`${key}: ${NEEDS_NMSTATECTL}`);
  if (state['dns-resolver']?.config?.options?.length) out.push(`dns-resolver.config.options: ${NEEDS_NMSTATECTL}`);
  (state.interfaces ?? []).forEach((iface, i) => {
    if ((iface.state ?? 'up') !== 'up') return;
    const at = `interfaces[${i}] (${iface.name})`;
    try {
      connectionType(iface);
    } catch (err) {
      if (!(err instanceof UnsupportedStateError)) throw err;
      out.push(`${at}.type: ${err.message}`);
      return;
    }
    for (const key of Object.keys(iface).filter((k) => !INTERFACE_KEYS.has(k)))
      out.push(`${at}.${key}: ${NEEDS_NMSTATECTL}`);
    for (const family of ['ipv4', 'ipv6'] as const)
      for (const key of Object.keys(iface[family] ?? {}).filter((k) => !IP_KEYS.has(k)))
        out.push(`${at}.${family}.${key}: ${NEEDS_NMSTATECTL}`);
  });
  (state.routes?.config ?? []).forEach((route, i) => {
    for (const key of Object.keys(route).filter((k) => !ROUTE_KEYS.has(k)))
      out.push(`routes.config[${i}].${key}: ${NEEDS_NMSTATECTL}`);
  });
  if (out.length) return out;
  // the translation's own refusals (a VLAN without its parent, DNS no interface can carry, ...)
  try {
    profilesFor(desired, options);
  } catch (err) {
    if (!(err instanceof UnsupportedStateError)) throw err;
    out.push(err.message);
  }
  return out;
}
