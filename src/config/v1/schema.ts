/**
 * Site-config v1: the zod schema is the single source of the field list. The
 * JSON Schema for editors and the README's field reference are generated from it.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';

export const API_VERSION = 'sno-relocate/v1';
export const KIND = 'SiteConfig';

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function isDnsName(value: string): boolean {
  return value.length <= 253 && value.split('.').every((label) => DNS_LABEL.test(label));
}

export function isCidr(value: string, family: 4 | 6 | 'any' = 'any'): boolean {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(value);
  if (!m?.[1] || !m[2]) return false;
  const bits = Number(m[2]);
  if (isIPv4(m[1])) return family !== 6 && bits <= 32;
  if (isIPv6(m[1])) return family !== 4 && bits <= 128;
  return false;
}

const dnsName = (what: string) =>
  z.string().refine(isDnsName, { message: `not a valid DNS name (${what}: lowercase letters, digits, '-' and '.')` });

const fileName = z
  .string()
  .min(1, 'must name a file')
  .max(255, 'file name too long')
  .describe('a file beside the site-config; it may not leave that folder');

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

const mirror = z.strictObject({
  source: z.string().min(1).describe('registry or repository the images are normally pulled from'),
  mirrors: z
    .array(z.string().min(1))
    .min(1, 'at least one mirror is needed')
    .describe('mirror repositories, tried in order'),
  mirrorSourcePolicy: z
    .enum(['AllowContactingSource', 'NeverContactSource'])
    .optional()
    .describe('whether the source may still be contacted'),
});

export const pullSecretSchema = z
  .looseObject({
    auths: z
      .record(z.string(), z.looseObject({ auth: z.string().optional(), email: z.string().optional() }))
      .describe('registry host to credentials'),
  })
  .describe('a container registry auth file ({"auths": {...}})');

const certPair = z
  .strictObject({ certFile: fileName, keyFile: fileName })
  .describe('PEM certificate (chain) and its private key');

export const siteConfigSchema = z.strictObject({
  apiVersion: z.literal(API_VERSION, { message: `must be ${API_VERSION}` }).describe('version of this format'),
  kind: z.literal(KIND, { message: `must be ${KIND}` }).describe('always SiteConfig'),
  metadata: z
    .strictObject({
      name: z
        .string()
        .regex(/^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/, 'site id: 1-63 lowercase letters, digits, ".", "_", "-"')
        .describe('site id, shown in logs and status'),
    })
    .describe('the site'),
  spec: z.strictObject({
    baseDomain: dnsName('baseDomain').describe(
      'new cluster domain: api.<cluster>.<baseDomain>, *.apps.<cluster>.<baseDomain>',
    ),
    clusterName: z
      .string()
      .regex(DNS_LABEL, 'not a DNS label')
      .optional()
      .describe('must equal the current name unless the change is supported'),
    hostname: dnsName('hostname').optional().describe('static hostname of the node'),
    network: z
      .strictObject({
        nmstate: nmstateSchema.optional(),
        nmstateFile: fileName.optional().describe('nmstate YAML beside the site-config (instead of nmstate)'),
        internalIP: z
          .string()
          .refine((v) => isCidr(v), { message: 'not an IP address with prefix length (CIDR)' })
          .optional()
          .describe('br-ex internal node IP, normally fixed at the factory'),
        verify: z
          .strictObject({
            pingGateway: z.boolean().optional().describe('the default gateway must answer ping'),
            resolve: z.array(z.string()).optional().describe('these names must resolve'),
            timeoutSeconds: z
              .number()
              .int()
              .min(5)
              .max(900)
              .optional()
              .describe('how long the checks may take before rollback (5-900, default 90)'),
          })
          .optional()
          .describe('after apply, roll back unless these pass in time'),
      })
      .describe('the site network: nmstate state, internal IP, checks'),
    pullSecret: pullSecretSchema.optional(),
    pullSecretFile: fileName.optional().describe('pull secret JSON beside the site-config (instead of pullSecret)'),
    pullSecretPolicy: z
      .enum(['replace', 'merge'])
      .optional()
      .describe('replace the cluster pull secret (default) or merge the site registries into it'),
    imageDigestMirrors: z
      .array(mirror)
      .optional()
      .describe('ImageDigestMirrorSet (ImageContentSourcePolicy on old clusters)'),
    imageTagMirrors: z.array(mirror).optional().describe('ImageTagMirrorSet: images pulled by tag'),
    certificates: z
      .strictObject({
        ingress: certPair.optional().describe('for *.apps: console, downloads, oauth and the default ingress'),
        api: certPair.optional().describe('for api.<cluster>.<baseDomain>'),
      })
      .optional()
      .describe('without them a site CA is generated on the node'),
    sshAuthorizedKeys: z
      .array(z.string())
      .optional()
      .describe('installed first, so a bad network config can still be debugged'),
  }),
});

export type SiteConfigV1 = z.infer<typeof siteConfigSchema>;
export type NmstateState = z.infer<typeof nmstateSchema>;
export type Mirror = z.infer<typeof mirror>;
export type DockerConfig = z.infer<typeof pullSecretSchema>;
