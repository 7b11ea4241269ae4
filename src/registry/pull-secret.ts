/**
 * The cluster's pull secret, openshift-config/pull-secret: read without ever quoting a credential,
 * and the one it should hold for the site (replaced, or the site's registries merged in). The
 * cluster-pull-secret step writes it; the registry check pulls with it first.
 */
import type { DockerConfig } from '../config/v1/schema.js';
import { CONFIG_NAMESPACE, type SecretObject } from '../kube/openshift.js';

export const DOCKERCONFIG_KEY = '.dockerconfigjson';
export const PULL_SECRET = { apiVersion: 'v1', kind: 'Secret', name: 'pull-secret', namespace: CONFIG_NAMESPACE };
export const PULL_SECRET_TARGET = `Secret ${CONFIG_NAMESPACE}/pull-secret`;

export type Read = { value?: unknown; unreadable?: string };

export function readSecret(secret: SecretObject | undefined): Read {
  const data = secret?.data?.[DOCKERCONFIG_KEY];
  if (data === undefined) return {};
  try {
    return { value: JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as unknown };
  } catch {
    // never quote the parser's message: it shows the text around the error, credentials included
    return { unreadable: `${PULL_SECRET_TARGET} does not hold valid JSON in ${DOCKERCONFIG_KEY}` };
  }
}

export function authsOf(current: Read): Record<string, unknown> | undefined {
  const auths = (current.value as { auths?: unknown } | undefined)?.auths;
  return auths !== null && typeof auths === 'object' && !Array.isArray(auths)
    ? (auths as Record<string, unknown>)
    : undefined;
}

/** The pull secret the cluster should hold, from what it holds now; a string says why it cannot be made. */
export function desiredPullSecret(
  site: DockerConfig,
  policy: 'replace' | 'merge',
  current: Read,
): DockerConfig | string {
  if (policy === 'replace') return site;
  if (current.unreadable) return `${current.unreadable}, so the site's registries cannot be merged into it`;
  if (current.value === undefined) return site;
  const auths = authsOf(current);
  if (auths === undefined) return `${PULL_SECRET_TARGET} holds no "auths" object to merge into`;
  return { ...(current.value as object), auths: { ...(auths as DockerConfig['auths']), ...site.auths } };
}
