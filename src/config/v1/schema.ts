/**
 * Site-config v1: the zod schema is the single source of the field list. The
 * JSON Schema for editors and the README's field reference are generated from it.
 */
import * as z from 'zod';
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

/*
 * As strict as the CRDs that receive them (openshift/api config/v1 types_image_digest_mirror_set.go
 * and types_image_tag_mirror_set.go, their kubebuilder patterns and list types): a host with an
 * optional port and a lowercase path, no URL scheme, tag or digest; a source may also be a
 * `*.domain` wildcard; mirrors are a set. ImageContentSourcePolicy, on older clusters, checks less.
 */
const HOST_LABEL = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const REPOSITORY = `(${HOST_LABEL}(?:(?:\\.${HOST_LABEL})+)?(?::[0-9]+)?)(?:(?:/[a-z0-9]+(?:(?:(?:[._]|__|[-]*)[a-z0-9]+)+)?)+)?`;
const REPOSITORY_FORM = 'a registry host[:port] and lowercase path, without a URL scheme, tag or digest';
const mirror = z.strictObject({
  source: z
    .string()
    .regex(new RegExp(`^\\*(?:\\.${HOST_LABEL})+$|^${REPOSITORY}$`), `must be ${REPOSITORY_FORM}, or *.domain`)
    .describe('registry or repository the images are normally pulled from'),
  mirrors: z
    .array(z.string().regex(new RegExp(`^${REPOSITORY}$`), `must be ${REPOSITORY_FORM}`))
    .min(1, 'at least one mirror is needed')
    .refine((list) => new Set(list).size === list.length, 'a mirror is listed twice')
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

// ---- Hand-over: the site's access and what "in service" means (their own block) ----

/** A Kubernetes label selector in its string form: `key=value` pairs, comma separated. */
const LABEL_SELECTOR = /^[A-Za-z0-9._/-]+(!?=|==)[A-Za-z0-9._-]*(,[A-Za-z0-9._/-]+(!?=|==)[A-Za-z0-9._-]*)*$/;

const workloadSchema = z
  .strictObject({
    kind: z.enum(['Deployment', 'StatefulSet', 'DaemonSet']).describe('Deployment, StatefulSet or DaemonSet'),
    namespace: z.string().regex(DNS_LABEL, 'not a namespace name').describe('its namespace'),
    name: dnsName('name').optional().describe('one workload by name (or selector)'),
    selector: z
      .string()
      .regex(LABEL_SELECTOR, 'not a label selector (key=value[,key=value])')
      .optional()
      .describe('every workload of that kind with these labels (key=value,...); at least one must exist'),
  })
  .describe('a workload that must be ready');

export const inServiceSchema = z
  .strictObject({
    workloads: z.array(workloadSchema).optional().describe('the workloads that mean the site is up'),
    probe: z
      .strictObject({
        url: z
          .string()
          .regex(/^https?:\/\/[^\s]+$/, 'not an http:// or https:// URL')
          .describe('fetched from the node; any 2xx answer counts'),
        insecure: z.boolean().optional().describe('accept any server certificate (default false)'),
      })
      .optional()
      .describe('a URL that must answer'),
    timeoutSeconds: z
      .number()
      .int()
      .min(10)
      .max(3600)
      .optional()
      .describe('how long to wait for all of them (10-3600, default 600)'),
  })
  .describe('the site is in service only when these are ready');

export const accessSchema = z
  .strictObject({
    clientCAFile: fileName
      .optional()
      .describe("the site's admin client CA (PEM certificates); kubeconfigs it signs work after the run"),
    kubeadminPasswordHash: z
      .string()
      .regex(/^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/, 'not a bcrypt hash ($2a$/$2b$/$2y$, cost, 53 characters)')
      .optional()
      .describe('bcrypt hash of the kubeadmin password (at least 23 characters), written into kube-system/kubeadmin'),
    siteCA: certPair
      .optional()
      .describe('the CA that signs the API and apps certificates; without it one is generated on the node'),
    factoryAdminKubeconfig: z
      .enum(['keep', 'revoke'])
      .optional()
      .describe(
        "whether the installer's admin.kubeconfig stays a cluster admin at the site (default: revoke with clientCAFile, else left as it is; only keep puts a revoked one back)",
      ),
  })
  .describe('who can log in at the site');

// ---- end of the hand-over block ----

// ---- The site's services on the node and in the cluster: NTP, proxy, trust bundle, node labels ----

/** A label key as Kubernetes takes it: an optional DNS-subdomain prefix and "/", then a name of 1-63 characters. */
const LABEL_NAME = '[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?';
const LABEL_KEY = new RegExp(
  `^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*/)?${LABEL_NAME}$`,
);
const LABEL_VALUE = new RegExp(`^(${LABEL_NAME})?$`);

export const nodeLabelsSchema = z
  .record(
    z.string().regex(LABEL_KEY, 'not a label key ([prefix/]name, the name 1-63 letters, digits, "-", "_", ".")'),
    z.string().regex(LABEL_VALUE, 'not a label value (at most 63 letters, digits, "-", "_", ".")'),
  )
  .describe("labels set on this node's Node object; labels the agent did not set are never removed");

const proxyUrl = (what: string) =>
  z
    .string()
    .regex(/^https?:\/\/[^\s/]+(\/[^\s]*)?$/, `not an http:// or https:// URL (${what})`)
    .optional();

export const proxySchema = z
  .strictObject({
    httpProxy: proxyUrl('httpProxy').describe('proxy for http:// requests'),
    httpsProxy: proxyUrl('httpsProxy').describe('proxy for https:// requests'),
    noProxy: z
      .string()
      .regex(/^[^\s,]+(,[^\s,]+)*$/, 'a comma-separated list of domains, IP addresses or CIDRs, without spaces')
      .optional()
      .describe('comma-separated domains, addresses and CIDRs reached without the proxy'),
  })
  .describe('the cluster-wide proxy (proxy.config.openshift.io/cluster spec)');

export const trustBundleSchema = z
  .strictObject({
    caBundle: z.string().optional().describe('PEM certificates the cluster trusts besides the system bundle'),
    caBundleFile: fileName.optional().describe('the same, as a PEM file beside the site-config (instead of caBundle)'),
    proxyTrustedCA: z
      .boolean()
      .optional()
      .describe("name the bundle in the proxy's spec.trustedCA (default: true when spec.proxy is given)"),
  })
  .describe('openshift-config/user-ca-bundle, as the installer writes additionalTrustBundle');

// ---- end of the site services block ----

const internalCidr = z.string().refine((v) => isCidr(v), { message: 'not an IP address with prefix length (CIDR)' });

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
    nodeName: z
      .enum(['keep', 'rename'])
      .optional()
      .describe(
        "the Kubernetes node name: keep the factory's (default; only the OS hostname changes) or rename it to spec.hostname where the preflight finds nothing it would break",
      ),
    network: z
      .strictObject({
        nmstate: nmstateSchema.optional(),
        nmstateFile: fileName.optional().describe('nmstate YAML beside the site-config (instead of nmstate)'),
        internalIP: z
          .union([internalCidr, z.array(internalCidr).min(1).max(2, 'one address per IP family, two at most')])
          .optional()
          .describe(
            "br-ex internal node IP, normally fixed at the factory; dual-stack: one per family, the cluster's primary family first",
          ),
        machineNetworks: z
          .array(z.string().refine((v) => v.includes('/') && isCidr(v), { message: 'not a network (CIDR)' }))
          .min(1)
          .max(2, 'one network per IP family, two at most')
          .optional()
          .describe("the site's machine networks: nodeip-configuration's hint (KUBELET_NODEIP_HINT)"),
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
    secretsInClear: z
      .boolean()
      .optional()
      .describe(
        'true: the secrets travel in clear on purpose, for a node shipped without a node key, which takes them only then (default false); a node with a key refuses secrets in clear',
      ),
    imageDigestMirrors: z
      .array(mirror)
      .optional()
      .describe('ImageDigestMirrorSet (ImageContentSourcePolicy on old clusters)'),
    imageTagMirrors: z.array(mirror).optional().describe('ImageTagMirrorSet: images pulled by tag'),
    registryCheck: z
      .enum(['check', 'skip'])
      .optional()
      .describe(
        "before the pull secret and mirrors change: every image the node needs asked of the site's registries (default check)",
      ),
    chronyConfig: z
      .string()
      .min(1)
      .optional()
      .describe("the node's chrony.conf (NTP); chronyd runs with it, the factory's /etc/chrony.conf stays"),
    proxy: proxySchema.optional(),
    trustBundle: trustBundleSchema.optional(),
    nodeLabels: nodeLabelsSchema.optional(),
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
    access: accessSchema.optional(),
    inService: inServiceSchema.optional(),
    budgetMinutes: z
      .number()
      .int()
      .min(1)
      .max(1440)
      .optional()
      .describe('the time the whole relocation may take at the site; validate warns when the timeouts allow more'),
  }),
});

export type SiteConfigV1 = z.infer<typeof siteConfigSchema>;
export type Mirror = z.infer<typeof mirror>;
export type DockerConfig = z.infer<typeof pullSecretSchema>;
export type Workload = z.infer<typeof workloadSchema>;
