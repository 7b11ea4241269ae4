/** A read and valid site-config document, with the files it names, -> the Site the steps act on. */
import { DEFAULT_IN_SERVICE_TIMEOUT_SECONDS, DEFAULT_VERIFY_TIMEOUT_SECONDS } from '../base/timeouts.js';
import type { NmstateState } from '../base/nmstate.js';
import type { ImageBasedSite } from './ibi/image-based.js';
import type { InService, Site } from './site.js';
import type { SiteConfigV1 } from './v1/schema.js';

/** What a site-config's fields read from files became. */
export type SiteFields = Pick<Site, 'pullSecret' | 'certificates' | 'access' | 'trustBundle' | 'extraManifests'>;

function toInService(config: SiteConfigV1): InService | undefined {
  const spec = config.spec.inService;
  if (!spec) return undefined;
  return {
    workloads: spec.workloads ?? [],
    ...(spec.probe && { probe: { url: spec.probe.url, insecure: spec.probe.insecure ?? false } }),
    timeoutSeconds: spec.timeoutSeconds ?? DEFAULT_IN_SERVICE_TIMEOUT_SECONDS,
  };
}

/** One internal IP, or one per family: the first is the primary family's. */
export function internalIpList(internalIP: string | string[] | undefined): string[] {
  return internalIP === undefined ? [] : typeof internalIP === 'string' ? [internalIP] : internalIP;
}

function internalIpFields(
  internalIP: string | string[] | undefined,
): Pick<Site['network'], 'internalIP' | 'secondaryInternalIP'> {
  const [primary, secondary] = internalIpList(internalIP);
  return {
    ...(primary !== undefined && { internalIP: primary }),
    ...(secondary !== undefined && { secondaryInternalIP: secondary }),
  };
}

export function toSite(config: SiteConfigV1, nmstate: NmstateState, rest: SiteFields): Site {
  const { spec } = config;
  return {
    name: config.metadata.name,
    baseDomain: spec.baseDomain,
    ...(spec.clusterName !== undefined && { clusterName: spec.clusterName }),
    ...(spec.hostname !== undefined && { hostname: spec.hostname }),
    ...(spec.nodeName !== undefined && { nodeName: spec.nodeName }),
    network: {
      nmstate,
      ...internalIpFields(spec.network.internalIP),
      machineNetworks: spec.network.machineNetworks ?? [],
      verify: {
        pingGateway: spec.network.verify?.pingGateway ?? false,
        resolve: spec.network.verify?.resolve ?? [],
        timeoutSeconds: spec.network.verify?.timeoutSeconds ?? DEFAULT_VERIFY_TIMEOUT_SECONDS,
      },
    },
    ...(rest.pullSecret !== undefined && { pullSecret: rest.pullSecret }),
    pullSecretPolicy: spec.pullSecretPolicy ?? 'replace',
    imageDigestMirrors: spec.imageDigestMirrors ?? [],
    imageTagMirrors: spec.imageTagMirrors ?? [],
    ...(spec.registryCheck === 'skip' && { registryCheck: 'skip' as const }),
    certificates: rest.certificates,
    sshAuthorizedKeys: spec.sshAuthorizedKeys ?? [],
    ...(rest.access && { access: rest.access }),
    ...(spec.chronyConfig !== undefined && { chronyConfig: spec.chronyConfig }),
    ...(spec.proxy !== undefined && { proxy: spec.proxy }),
    ...(rest.trustBundle && { trustBundle: rest.trustBundle }),
    nodeLabels: spec.nodeLabels ?? {},
    ...(spec.inService && { inService: toInService(config) }),
    extraManifests: rest.extraManifests,
  };
}

/**
 * The site with the media's admin client CA in place of access.clientCaPem (the access step's
 * spec.clientCA). As with a native site-config's clientCAFile, the site then has administrators of
 * its own, and the factory's admin.kubeconfig is revoked: media have no field that keeps it.
 */
export function withImageBased(site: Site, imageBased: ImageBasedSite | undefined): Site {
  if (!imageBased) return site;
  const { adminClientCaPem } = imageBased;
  return {
    ...site,
    imageBased,
    ...(adminClientCaPem !== undefined && {
      access: {
        ...site.access,
        clientCaPem: adminClientCaPem,
        factoryAdminKubeconfig: site.access?.factoryAdminKubeconfig ?? 'revoke',
      },
    }),
  };
}
