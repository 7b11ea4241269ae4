/**
 * Site-config v1: the zod schema is the single source of the field list. The
 * JSON Schema for editors and the README's field reference are generated from it.
 */
import { z } from 'zod';
import { isCidr } from '../../base/addresses.js';
import { nmstateSchema } from '../../base/nmstate.js';

export const API_VERSION = 'sno-relocate/v1';
export const KIND = 'SiteConfig';

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function isDnsName(value: string): boolean {
  return value.length <= 253 && value.split('.').every((label) => DNS_LABEL.test(label));
}

const dnsName = (what: string) =>
  z.string().refine(isDnsName, { message: `not a valid DNS name (${what}: lowercase letters, digits, '-' and '.')` });

const fileName = z
  .string()
  .min(1, 'must name a file')
  .max(255, 'file name too long')
  .describe('a file beside the site-config; it may not leave that folder');

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
export type Mirror = z.infer<typeof mirror>;
export type DockerConfig = z.infer<typeof pullSecretSchema>;
