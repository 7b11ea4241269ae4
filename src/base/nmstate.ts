/**
 * nmstate's state as the agent reads it (the part of a site-config's network, and what nmstatectl or
 * NetworkManager show): a zod schema that passes other nmstate keys through untouched.
 */
import { isIPv4, isIPv6 } from 'node:net';
import * as z from 'zod';
import { canonicalIp, formatCidr, isCidr, parseCidr } from './addresses.js';

const ipv4 = z.string().refine((v) => isIPv4(v), { message: 'not an IPv4 address' });
const ipv6 = z.string().refine((v) => isIPv6(v), { message: 'not an IPv6 address' });
const anyIp = z.string().refine((v) => isIPv4(v) || isIPv6(v), { message: 'not an IP address' });
/** an address or a network: nmstate takes a bare address as a host route (/32, /128) */
const ipOrCidr = z.string().refine((v) => isCidr(v) || isIPv4(v) || isIPv6(v), { message: 'not an IP network' });
/** an IPv6 DNS server may name its link: fe80::1%eth1 */
const dnsServer = z
  .string()
  .refine((v) => isIPv4(v) || isIPv6(v) || (isIPv6(v.split('%')[0]!) && v.split('%').length === 2), {
    message: 'not an IP address',
  });
/** nmstate reads these numbers from YAML numbers or from strings of digits */
const integer = (min: number, max: number) =>
  z
    .union([
      z.number(),
      z
        .string()
        .regex(/^-?\d+$/, 'not a number')
        .transform(Number),
    ])
    .pipe(z.number().int().min(min, `below ${min}`).max(max, `above ${max}`));
const U32 = 0xffffffff;

const addressEntry = (ip: z.ZodType<string>, maxPrefix: number) =>
  z.looseObject({
    ip,
    'prefix-length': z.number().int().min(0).max(maxPrefix, `prefix length above ${maxPrefix}`),
  });

const ipBlock = (ip: z.ZodType<string>, maxPrefix: number) =>
  z.looseObject({
    enabled: z.boolean().optional(),
    dhcp: z.boolean().optional(),
    autoconf: z.boolean().optional(),
    address: z.array(addressEntry(ip, maxPrefix)).optional(),
  });

/** nmstate's bond modes, by name or by the kernel's number */
const BOND_MODES = ['balance-rr', 'active-backup', 'balance-xor', 'broadcast', '802.3ad', 'balance-tlb', 'balance-alb'];
const bondMode = z
  .union([z.string(), z.number()])
  .refine((m) => BOND_MODES.includes(String(m)) || /^[0-6]$/.test(String(m)) || m === 'unknown', {
    message: `not a bond mode (${BOND_MODES.join(', ')})`,
  });

const NON_UNICAST = ['blackhole', 'unreachable', 'prohibit'] as const;

/**
 * A route as nmstate's RouteEntry reads it. `state: absent` removes every route it matches, and each
 * field it leaves out matches anything (no destination: every route of its interface). A route to
 * keep needs a destination and, unless it is a blackhole, unreachable or prohibit route, a next-hop
 * interface; such a route takes no next hop.
 */
const routeEntry = z
  .looseObject({
    state: z.literal('absent').optional(),
    destination: z.union([z.literal(''), ipOrCidr]).optional(),
    'next-hop-address': z.union([z.literal(''), anyIp]).optional(),
    'next-hop-interface': z.string().optional(),
    metric: integer(-1, Number.MAX_SAFE_INTEGER).optional(),
    'table-id': integer(0, U32).optional(),
    weight: integer(1, 256).optional(),
    'route-type': z.enum(NON_UNICAST).optional(),
    cwnd: integer(1, U32).optional(),
    source: anyIp.optional(),
  })
  .superRefine((route, ctx) => {
    if (route.weight !== undefined && route.destination && isIPv6(route.destination.split('/')[0]!))
      ctx.addIssue({ code: 'custom', path: ['weight'], message: 'nmstate takes no weight on IPv6 routes' });
    if (route.state === 'absent') return;
    if (!route.destination)
      ctx.addIssue({ code: 'custom', path: ['destination'], message: 'required unless state is absent' });
    const hop = route['next-hop-interface'];
    if (route['route-type'] !== undefined) {
      if ((hop !== undefined && hop !== 'lo') || route['next-hop-address'] !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['route-type'],
          message: `a ${route['route-type']} route takes no next hop`,
        });
    } else if (hop === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['next-hop-interface'],
        message: 'required unless state is absent or the route is a blackhole, unreachable or prohibit route',
      });
  });

/** A policy routing rule as nmstate's RouteRuleEntry reads it; `state: absent` removes what it matches. */
const routeRuleEntry = z
  .looseObject({
    state: z.literal('absent').optional(),
    family: z.enum(['ipv4', 'ipv6']).optional(),
    'ip-from': z.union([z.literal(''), ipOrCidr]).optional(),
    'ip-to': z.union([z.literal(''), ipOrCidr]).optional(),
    priority: integer(-1, U32).optional(),
    'route-table': integer(0, U32).optional(),
    fwmark: integer(0, U32).optional(),
    fwmask: integer(0, U32).optional(),
    action: z.enum(NON_UNICAST).optional(),
    iif: z.string().optional(),
    'suppress-prefix-length': integer(0, U32).optional(),
  })
  .superRefine((rule, ctx) => {
    const from = rule['ip-from'];
    const to = rule['ip-to'];
    if (rule.state !== 'absent' && from === undefined && to === undefined && rule.family === undefined)
      ctx.addIssue({ code: 'custom', path: [], message: 'give ip-from, ip-to or family' });
    for (const [key, value] of [
      ['ip-from', from],
      ['ip-to', to],
    ] as const)
      if (value && rule.family !== undefined && isIPv6(value.split('/')[0]!) !== (rule.family === 'ipv6'))
        ctx.addIssue({ code: 'custom', path: [key], message: `not an ${rule.family} address, as family says` });
    if (rule.fwmask !== undefined && !rule.fwmark)
      ctx.addIssue({ code: 'custom', path: ['fwmask'], message: 'needs a fwmark that is not zero' });
  });

/** resolv.conf options nmstate sets: these alone, and ndots, timeout and attempts with a value */
const DNS_OPTIONS = [
  'debug',
  'edns0',
  'inet6',
  'ip6-bytestring',
  'ip6-dotint',
  'no-aaaa',
  'no-check-names',
  'no-ip6-dotint',
  'no-reload',
  'no-tld-query',
  'rotate',
  'single-request',
  'single-request-reopen',
  'trust-ad',
  'use-vc',
];
const dnsOption = z.string().refine((o) => DNS_OPTIONS.includes(o) || /^(ndots|timeout|attempts):\d+$/.test(o), {
  message: `not a DNS option nmstate sets (${DNS_OPTIONS.join(', ')}, ndots:n, timeout:n, attempts:n)`,
});

/** The parts of an nmstate desired state the agent reads; other nmstate keys pass through untouched. */
export const nmstateSchema = z
  .looseObject({
    interfaces: z
      .array(
        z.looseObject({
          name: z.string().min(1, 'interface name is empty').max(15, 'interface names are at most 15 characters'),
          type: z.string().min(1, 'interface type is empty').optional(),
          state: z.enum(['up', 'down', 'absent', 'ignore', 'unknown']).optional(),
          'mac-address': z.string().optional(),
          mtu: z.number().int().min(68).max(65535).optional(),
          ipv4: ipBlock(ipv4, 32).optional(),
          ipv6: ipBlock(ipv6, 128).optional(),
          vlan: z.looseObject({ 'base-iface': z.string().min(1), id: z.number().int().min(0).max(4094) }).optional(),
          'link-aggregation': z
            .looseObject({ mode: bondMode.optional(), port: z.array(z.string().min(1)).optional() })
            .optional(),
        }),
      )
      .optional(),
    routes: z.looseObject({ config: z.array(routeEntry).optional() }).optional(),
    'route-rules': z.looseObject({ config: z.array(routeRuleEntry).optional() }).optional(),
    'dns-resolver': z
      .looseObject({
        // `config: {}` removes the static DNS configuration
        config: z
          .looseObject({
            server: z.array(dnsServer).optional(),
            search: z.array(z.string()).optional(),
            options: z.array(dnsOption).optional(),
          })
          .optional(),
      })
      .optional(),
  })
  .describe('nmstate desired state: interfaces, routes, route-rules, dns-resolver');

export type NmstateState = z.infer<typeof nmstateSchema>;

type RouteEntry = NonNullable<NonNullable<NmstateState['routes']>['config']>[number];

/** a route destination as one form: `10.9.0.0/16`, `::/0` */
export const canonicalDestination = (d: string): string => formatCidr(parseCidr(d));

/**
 * Whether route `want` matches route `have`, as nmstate's RouteEntry::is_match: a field `want`
 * leaves out (or gives as '') matches anything, so an absent route with only a next-hop interface
 * matches every route of that interface, and one with nothing matches every route.
 */
export function routeMatches(want: RouteEntry, have: RouteEntry): boolean {
  if (
    want.destination &&
    (!have.destination || canonicalDestination(want.destination) !== canonicalDestination(have.destination))
  )
    return false;
  if (want['next-hop-address'] === '') {
    if (have['next-hop-address']) return false;
  } else if (
    want['next-hop-address'] !== undefined &&
    canonicalIp(want['next-hop-address']) !== canonicalIp(String(have['next-hop-address'] ?? ''))
  )
    return false;
  if (want['next-hop-interface'] !== undefined && want['next-hop-interface'] !== have['next-hop-interface'])
    return false;
  return want.metric === undefined || want.metric === have.metric;
}
