/**
 * How a saved NetworkManager profile is updated into a desired one: merged, kept without
 * autoconnect, or stripped of the routes the desired state removes. Pure functions.
 */
import dbus from 'dbus-next';
import { type NmstateState, routeMatches } from '../../base/nmstate.js';
import type { Route, Settings } from './encoding.js';

const { Variant } = dbus;
type Variant = dbus.Variant;

/** a saved profile that stays, but is no longer brought up by NetworkManager on its own */
export function withoutAutoconnect(settings: Settings): Settings {
  return { ...settings, connection: { ...settings.connection, autoconnect: new Variant('b', false) } };
}

/** whether an existing profile can be updated into the desired one: a profile does not change type */
export const sameType = (existing: Settings, desired: Settings): boolean =>
  existing.connection?.type?.value === desired.connection?.type?.value;

/**
 * An existing profile updated to the desired settings. Keys the desired state sets replace theirs
 * and the rest stays (nmstate leaves what it is not told about: an MTU, a MAC binding), except
 * that the IP sections are replaced whole: NetworkManager hands out addresses, routes and DNS
 * twice (address-data and the older addresses, say), and a stale copy must not come back. The
 * profile's identity (id, uuid) is kept so that nothing else that names it breaks.
 */
export function mergeSettings(existing: Settings, desired: Settings): Settings {
  const merged: Settings = { ...existing };
  for (const [section, keys] of Object.entries(desired)) {
    merged[section] = section === 'ipv4' || section === 'ipv6' ? keys : { ...existing[section], ...keys };
  }
  const connection = merged.connection!;
  for (const keep of ['id', 'uuid'] as const)
    if (existing.connection?.[keep]) connection[keep] = existing.connection[keep];
  if (!desired.connection?.master) {
    delete connection.master;
    delete connection['slave-type'];
  } else {
    // a port carries no IP configuration of its own
    delete merged.ipv4;
    delete merged.ipv6;
  }
  return merged;
}

/** the routes the desired state removes (`state: absent`) */
export const absentRoutes = (state: NmstateState): Route[] =>
  (state.routes?.config ?? []).filter((r) => r.state === 'absent');

/**
 * A saved profile of interface `iface` without the routes that `absent` matches (nmstate's
 * matching: a field an absent route leaves out matches anything): its route-data entries and its
 * gateway, the default route. Undefined when none matches. NetworkManager hands a profile out with
 * the legacy `routes` and `addresses` beside `route-data` and `address-data`, and reads the legacy
 * ones first when a client sends both, so they are left out: a removed route would come back.
 */
export function withoutRoutes(settings: Settings, iface: string, absent: readonly Route[]): Settings | undefined {
  const matched = (r: Route) => absent.some((a) => routeMatches(a, r));
  let changed = false;
  const out: Settings = { ...settings };
  for (const [key, zero] of [
    ['ipv4', '0.0.0.0/0'],
    ['ipv6', '::/0'],
  ] as const) {
    const section = settings[key];
    if (!section) continue;
    const { routes: _legacyRoutes, addresses: _legacyAddresses, ...next } = section;
    const gateway = section.gateway?.value as string | undefined;
    if (gateway && matched({ destination: zero, 'next-hop-address': gateway, 'next-hop-interface': iface })) {
      delete next.gateway;
      changed = true;
    }
    const data = (section['route-data']?.value ?? []) as Record<string, Variant>[];
    const keep = data.filter(
      (r) =>
        !matched({
          destination: `${r.dest?.value as string}/${r.prefix?.value as number}`,
          ...(r['next-hop'] ? { 'next-hop-address': r['next-hop'].value as string } : {}),
          'next-hop-interface': iface,
          ...(r.metric ? { metric: r.metric.value as number } : {}),
        }),
    );
    if (keep.length !== data.length) {
      next['route-data'] = new Variant('aa{sv}', keep);
      changed = true;
    }
    out[key] = next;
  }
  return changed ? out : undefined;
}
