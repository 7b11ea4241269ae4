/**
 * The site network as nmstate sees it: the desired state the network step applies, and whether the
 * node's current state (`nmstatectl show`) already holds it. The comparison covers what a
 * site-config sets (interface state, MTU, MAC, IP settings, VLAN, bond, routes, DNS) in nmstate's
 * partial-state sense: keys the site-config leaves out are not compared.
 */
import { canonicalDestination, type NmstateState, routeMatches } from '../base/nmstate.js';
import { canonicalIp, formatCidr, isLinkLocal, parseCidr } from '../base/addresses.js';
import { BR_EX, type InternalIPs } from './internal-ip.js';

type Interface = NonNullable<NmstateState['interfaces']>[number];
type IpBlock = NonNullable<Interface['ipv4']>;
type Route = NonNullable<NonNullable<NmstateState['routes']>['config']>[number];

export interface Difference {
  /** where, e.g. `interfaces[br-ex].ipv4.address` */
  path: string;
  want: string;
  have: string;
}

const familyKey = (family: 4 | 6) => (family === 4 ? 'ipv4' : 'ipv6');

/**
 * The state the network step applies: the site's nmstate, with the internal IP added first to
 * br-ex's addresses of that family, whether the site gives br-ex static addresses or DHCP. nmstate
 * sets exactly the addresses it is given, so without this it would remove the internal IP (and its
 * own verification would trip over the copy the dispatcher script puts back). With DHCP the profile
 * keeps its method (auto) and carries the internal IP as a static address beside the lease, as the
 * factory's br-ex profile does for nodeip-configuration and ovs-configuration: NetworkManager adds
 * it when the profile activates, before the lease arrives.
 */
export function desiredNetworkState(nmstate: NmstateState, internalIPs: InternalIPs | undefined): NmstateState {
  // dual-stack: each family's block gets its own internal IP first
  return listOf(internalIPs).reduce(withInternalIP, nmstate);
}

const listOf = (internalIPs: InternalIPs | undefined): readonly string[] =>
  internalIPs === undefined ? [] : typeof internalIPs === 'string' ? [internalIPs] : internalIPs;

function withInternalIP(nmstate: NmstateState, internalIP: string): NmstateState {
  if (!nmstate.interfaces) return nmstate;
  const internal = parseCidr(internalIP);
  const key = familyKey(internal.family);
  const interfaces = nmstate.interfaces.map((iface) => {
    const block = iface[key] as IpBlock | undefined;
    const dynamic = block?.dhcp === true || block?.autoconf === true;
    const carries =
      iface.name === BR_EX &&
      iface.state !== 'absent' &&
      iface.state !== 'down' &&
      block !== undefined &&
      block.enabled !== false &&
      (dynamic || Array.isArray(block.address));
    const addresses = block?.address ?? [];
    if (
      !carries ||
      addresses.some((a) => formatCidr(parseCidr(`${a.ip}/${a['prefix-length']}`)) === formatCidr(internal))
    )
      return iface;
    return {
      ...iface,
      // first: OVN-Kubernetes takes br-ex's first address (netlink order) as the node IP, and
      // NetworkManager adds a profile's addresses in the profile's order
      [key]: { ...block, address: [{ ip: internal.ip, 'prefix-length': internal.prefix }, ...addresses] },
    };
  });
  return { ...nmstate, interfaces };
}

const show = (value: unknown): string =>
  value === undefined ? '(unset)' : Array.isArray(value) ? (value.length ? value.join(', ') : '(none)') : String(value);

function addressSet(block: IpBlock | undefined): string[] {
  return (block?.address ?? [])
    .filter((a) => !isLinkLocal(a.ip))
    .map((a) => formatCidr(parseCidr(`${a.ip}/${a['prefix-length']}`)))
    .sort();
}

function compareIp(
  where: string,
  want: IpBlock | undefined,
  have: IpBlock | undefined,
  allowedExtra: string | undefined,
): Difference[] {
  if (!want) return [];
  const out: Difference[] = [];
  const diff = (key: string, w: unknown, h: unknown) =>
    out.push({ path: `${where}.${key}`, want: show(w), have: show(h) });
  if (want.enabled === false) {
    if (have?.enabled !== false) diff('enabled', false, have?.enabled ?? true);
    return out;
  }
  if (want.enabled === true && have?.enabled !== true) diff('enabled', true, have?.enabled ?? false);
  for (const key of ['dhcp', 'autoconf'] as const) {
    if (want[key] !== undefined && (have?.[key] ?? false) !== want[key]) diff(key, want[key], have?.[key] ?? false);
  }
  // leased and autoconfigured addresses are the network's business, not the site-config's
  if (want.address !== undefined && want.dhcp !== true && want.autoconf !== true) {
    const wanted = addressSet(want);
    const present = addressSet(have).filter((a) => wanted.includes(a) || a !== allowedExtra);
    if (wanted.join() !== present.join()) diff('address', wanted, present);
  }
  return out;
}

function currentInterface(current: Interface[], want: Interface): Interface | undefined {
  const named = current.filter((c) => c.name === want.name && (want.type === undefined || c.type === want.type));
  // OVS lists br-ex twice, as the bridge and as its internal interface: the interface carries the IPs
  return named.find((c) => c.type !== 'ovs-bridge') ?? named[0];
}

const sameSet = (a: readonly string[] = [], b: readonly string[] = []) => [...a].sort().join() === [...b].sort().join();

function compareInterface(want: Interface, have: Interface | undefined, internalIPs: readonly string[]): Difference[] {
  const where = `interfaces[${want.name}]`;
  const wantState = want.state ?? 'up';
  if (wantState === 'ignore') return [];
  const haveState = have ? String(have.state ?? 'up') : 'absent';
  if (wantState === 'absent') return have ? [{ path: `${where}.state`, want: 'absent', have: haveState }] : [];
  if (wantState === 'down')
    return have && haveState !== 'down' ? [{ path: `${where}.state`, want: 'down', have: haveState }] : [];
  if (!have || haveState !== 'up') return [{ path: `${where}.state`, want: 'up', have: haveState }];

  const out: Difference[] = [];
  const diff = (key: string, w: unknown, h: unknown) =>
    out.push({ path: `${where}.${key}`, want: show(w), have: show(h) });
  if (want.mtu !== undefined && have.mtu !== want.mtu) diff('mtu', want.mtu, have.mtu);
  const mac = want['mac-address'];
  if (mac !== undefined && mac.toUpperCase() !== String(have['mac-address'] ?? '').toUpperCase())
    diff('mac-address', mac, have['mac-address']);
  const extras = want.name === BR_EX ? internalIPs.map(parseCidr) : [];
  for (const family of [4, 6] as const) {
    const key = familyKey(family);
    const extra = extras.find((e) => e.family === family);
    out.push(
      ...compareIp(
        `${where}.${key}`,
        want[key],
        have[key] as IpBlock | undefined,
        extra === undefined ? undefined : formatCidr(extra),
      ),
    );
  }
  if (want.vlan) {
    if (have.vlan?.['base-iface'] !== want.vlan['base-iface'])
      diff('vlan.base-iface', want.vlan['base-iface'], have.vlan?.['base-iface']);
    if (have.vlan?.id !== want.vlan.id) diff('vlan.id', want.vlan.id, have.vlan?.id);
  }
  const bond = want['link-aggregation'];
  if (bond) {
    const haveBond = have['link-aggregation'];
    if (haveBond?.mode !== bond.mode) diff('link-aggregation.mode', bond.mode, haveBond?.mode);
    if (bond.port !== undefined && !sameSet(bond.port, haveBond?.port))
      diff('link-aggregation.port', [...bond.port].sort(), [...(haveBond?.port ?? [])].sort());
  }
  return out;
}

const describeRoute = (r: Route) =>
  `${r.destination || '*'}${r['next-hop-address'] ? ` via ${r['next-hop-address']}` : ''}${r['next-hop-interface'] ? ` dev ${r['next-hop-interface']}` : ''}`;

function compareRoutes(desired: NmstateState, current: NmstateState): Difference[] {
  const currentRoutes = (current.routes?.config ??
    (current.routes as { running?: Route[] } | undefined)?.running ??
    []) as Route[];
  return (desired.routes?.config ?? []).flatMap((route): Difference[] => {
    const present = currentRoutes.some((r) => routeMatches(route, r));
    const absent = route.state === 'absent';
    if (absent === present)
      return [
        {
          path: `routes.config[${describeRoute(route)}]`,
          want: absent ? 'absent' : 'present',
          have: present ? 'present' : 'absent',
        },
      ];
    return [];
  });
}

type DnsConfig = { server?: string[]; search?: string[] };

function compareDns(desired: NmstateState, current: NmstateState): Difference[] {
  const want = desired['dns-resolver']?.config;
  if (!want) return [];
  const dns = current['dns-resolver'] as { config?: DnsConfig; running?: DnsConfig } | undefined;
  // what NetworkManager is configured with; what runs (from DHCP, say) where nothing is configured
  const have = {
    server: dns?.config?.server ?? dns?.running?.server,
    search: dns?.config?.search ?? dns?.running?.search,
  };
  const out: Difference[] = [];
  if (want.server !== undefined && want.server.map(canonicalIp).join() !== (have.server ?? []).map(canonicalIp).join())
    out.push({ path: 'dns-resolver.config.server', want: show(want.server), have: show(have.server ?? []) });
  if (want.search !== undefined && want.search.join() !== (have.search ?? []).join())
    out.push({ path: 'dns-resolver.config.search', want: show(want.search), have: show(have.search ?? []) });
  return out;
}

/** What differs between the desired state and the current one; empty when the node already holds it. */
export function compareNetworkState(
  desired: NmstateState,
  current: NmstateState,
  internalIPs?: InternalIPs,
): Difference[] {
  const currentInterfaces = current.interfaces ?? [];
  return [
    ...(desired.interfaces ?? []).flatMap((want) =>
      compareInterface(want, currentInterface(currentInterfaces, want), listOf(internalIPs)),
    ),
    ...compareRoutes(desired, current),
    ...compareDns(desired, current),
  ];
}

/** Plan diff lines: `- path: have`, `+ path: want`. */
export function differenceLines(differences: readonly Difference[]): string[] {
  return differences.flatMap((d) => [`- ${d.path}: ${d.have}`, `+ ${d.path}: ${d.want}`]);
}

export interface Gateway {
  address: string;
  iface?: string;
}

/** The next hops of the default routes the node runs with (configured ones when nmstate lists no running routes). */
export function defaultGateways(state: NmstateState): Gateway[] {
  const routes = state.routes as { running?: Route[]; config?: Route[] } | undefined;
  const candidates = routes?.running?.length ? routes.running : (routes?.config ?? []);
  const seen = new Set<string>();
  return candidates.flatMap((r) => {
    const hop = r['next-hop-address'];
    if (
      !hop ||
      !r.destination ||
      !['0.0.0.0/0', '::/0'].includes(canonicalDestination(r.destination)) ||
      ['0.0.0.0', '::'].includes(canonicalIp(hop))
    )
      return [];
    if (r.state === 'absent' || seen.has(canonicalIp(hop))) return [];
    seen.add(canonicalIp(hop));
    return [
      { address: canonicalIp(hop), ...(r['next-hop-interface'] !== undefined && { iface: r['next-hop-interface'] }) },
    ];
  });
}

/**
 * The families the site routes (a default route in its nmstate, or addresses by DHCP or router
 * advertisements) that have no default gateway on the node: dual-stack, each family's gateway is
 * checked, not only the first one found.
 */
export function missingGatewayFamilies(desired: NmstateState, gateways: readonly Gateway[]): string[] {
  const routed = new Set<4 | 6>();
  for (const r of desired.routes?.config ?? []) {
    const destination = r.destination === undefined ? undefined : canonicalDestination(r.destination);
    if (r.state !== 'absent' && destination === '0.0.0.0/0') routed.add(4);
    if (r.state !== 'absent' && destination === '::/0') routed.add(6);
  }
  for (const iface of desired.interfaces ?? []) {
    if (iface.state === 'absent' || iface.state === 'down') continue;
    if (iface.ipv4?.enabled !== false && iface.ipv4?.dhcp === true) routed.add(4);
    const v6 = iface.ipv6;
    if (v6?.enabled !== false && (v6?.dhcp === true || v6?.autoconf === true)) routed.add(6);
  }
  const present = new Set(gateways.map((g) => parseCidr(g.address).family));
  return [...routed]
    .sort()
    .filter((family) => !present.has(family))
    .map((family) => `no IPv${family} default route, so no IPv${family} gateway to ping`);
}
