/**
 * nmstate's state as the agent reads it (the part of a site-config's network, and what nmstatectl or
 * NetworkManager show): a zod schema that passes other nmstate keys through untouched.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';
import { isCidr } from './addresses.js';

const ipv4 = z.string().refine((v) => isIPv4(v), { message: 'not an IPv4 address' });
const ipv6 = z.string().refine((v) => isIPv6(v), { message: 'not an IPv6 address' });
const anyIp = z.string().refine((v) => isIPv4(v) || isIPv6(v), { message: 'not an IP address' });

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

/** The parts of an nmstate desired state the agent reads; other nmstate keys pass through untouched. */
export const nmstateSchema = z
  .looseObject({
    interfaces: z
      .array(
        z.looseObject({
          name: z.string().min(1, 'interface name is empty').max(15, 'interface names are at most 15 characters'),
          type: z.string().optional(),
          state: z.enum(['up', 'down', 'absent', 'ignore']).optional(),
          'mac-address': z.string().optional(),
          mtu: z.number().int().min(68).max(65535).optional(),
          ipv4: ipBlock(ipv4, 32).optional(),
          ipv6: ipBlock(ipv6, 128).optional(),
          vlan: z.looseObject({ 'base-iface': z.string().min(1), id: z.number().int().min(1).max(4094) }).optional(),
          'link-aggregation': z
            .looseObject({ mode: z.string().min(1), port: z.array(z.string().min(1)).optional() })
            .optional(),
        }),
      )
      .optional(),
    routes: z
      .looseObject({
        config: z
          .array(
            z.looseObject({
              destination: z.string().refine((v) => isCidr(v), { message: 'not a CIDR' }),
              'next-hop-address': anyIp.optional(),
              'next-hop-interface': z.string().optional(),
              metric: z.number().int().optional(),
            }),
          )
          .optional(),
      })
      .optional(),
    'dns-resolver': z
      .looseObject({
        config: z.looseObject({ server: z.array(anyIp).optional(), search: z.array(z.string()).optional() }).optional(),
      })
      .optional(),
  })
  .describe('nmstate desired state: interfaces, routes, dns-resolver');

export type NmstateState = z.infer<typeof nmstateSchema>;
